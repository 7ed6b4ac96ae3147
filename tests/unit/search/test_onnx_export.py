"""A folder that cannot be a model fails before any export child (which imports torch) starts, and
the folder's cache key is remembered safely by threads that look it up at once."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from graph.search.onnx_export import cache_root, cached_dir, ensure_exported, folder_key


def test_a_folder_without_config_fails_without_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(RuntimeError, match=r"ONNX export of .*not-a-model failed: no config\.json"):
        ensure_exported(str(folder))  # the unit tier's audit hook fails any process start
    assert not (tmp_path / "cache").exists()  # nothing hashed or cached for it either


def _look_up(folder: Path, start: threading.Barrier, found: list[Path | BaseException]) -> None:
    start.wait()
    try:
        found.append(cached_dir(str(folder)))
    except BaseException as exc:  # noqa: BLE001 (the failure is the finding)
        found.append(exc)


def test_threads_that_look_up_a_new_folder_at_once_all_get_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner's warm-up and its first embedding (or the session encoder) look the folder up from two
    threads of one process: each remembers the key through a file of its own (one named by the pid
    alone was replaced by one thread under the other: FileNotFoundError, the embedding failed)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"w" * 4096)
    expected = cache_root() / folder_key(str(folder))
    for _ in range(30):
        shutil.rmtree(cache_root() / "keys", ignore_errors=True)  # a first start each round
        start, found = threading.Barrier(6), list[Path | BaseException]()
        threads = [threading.Thread(target=_look_up, args=(folder, start, found)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert found == [expected] * 6
        assert len(list((cache_root() / "keys").iterdir())) == 1  # the memo alone: no partial left
