"""A folder that cannot be a model fails before any export child (which imports torch) starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.search.onnx_export import ensure_exported


def test_a_folder_without_config_fails_without_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(RuntimeError, match=r"ONNX export of .*not-a-model failed: no config\.json"):
        ensure_exported(str(folder))  # the unit tier's audit hook fails any process start
    assert not (tmp_path / "cache").exists()  # nothing hashed or cached for it either
