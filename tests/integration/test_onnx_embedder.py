"""The ONNX Runtime embedder against the real torch model it was exported from, its export
cache, and the owning process running without torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flowbaby.demo_data import DEMO_SUMMARIES
from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from graph.search.onnx_export import cached_dir, ensure_exported, folder_key
from tests.conftest import summary

ODD = [
    "",
    "   leading and trailing spaces   ",
    "Ünïcödé wörds, naïve café — “quotes” and ‘apostrophes’ … ellipsis",
    "日本語のテキストと中文字符混在 with English",
    "emoji 🚀🔥👩‍💻 and ZWJ sequences 🏳️‍🌈",
    "zero\u200bwidth\u00a0nbsp\ttab\r\nnewline",
    "Ελληνικά και русский текст и العربية",
    "SELECT * FROM ledger WHERE id = 42; -- E_LEDGER_LOCK",
    "a" * 400,
    "x",
]


def varied_texts() -> list[str]:
    texts = [s["context"] for s in DEMO_SUMMARIES] + [s["topic"] for s in DEMO_SUMMARIES]
    texts += [d for s in DEMO_SUMMARIES for d in s.get("decisions", [])][:10]
    everything = [text for s in DEMO_SUMMARIES for v in s.values() for text in (v if isinstance(v, list) else [v])]
    long = " ".join(text for text in everything if isinstance(text, str))  # well over 256 word pieces
    return [*texts, long, long[len(long) // 2 :], *ODD]


def test_onnx_vectors_match_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    texts = varied_texts()
    embedder = Embedder(default_model_path())
    assert max(embedder.tokenizer.count_tokens(t) for t in texts) > 1000  # truncation is exercised
    ours = np.asarray(embedder.encode(texts), dtype=np.float32)
    model = SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)
    theirs = model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
    assert ours.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() >= 0.999, [(t[:40], c) for t, c in zip(texts, cosine, strict=True) if c < 0.999]
    # One text alone gives the same vector as inside a padded batch.
    np.testing.assert_allclose(embedder.encode([texts[0]])[0], ours[0], atol=1e-5)


@pytest.mark.slow
def test_a_model_folder_is_exported_once_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured folder (as FLOWBABY_EMBEDDING_MODEL) is exported lazily into the cache; a
    changed folder gets a new file, an unchanged one is not exported again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    shutil.copytree(default_model_path(), folder)
    vector = Embedder(str(folder)).encode(["Redis session cache"])[0]
    exported = cached_dir(str(folder))
    assert (exported / "model.onnx").is_file() and exported.parent == tmp_path / "cache" / "flowbaby" / "onnx"
    assert np.dot(vector, Embedder(default_model_path()).encode(["Redis session cache"])[0]) > 0.9999
    stamp = (exported / "model.onnx").stat().st_mtime_ns
    assert ensure_exported(str(folder)) == exported and (exported / "model.onnx").stat().st_mtime_ns == stamp
    before = folder_key(str(folder))
    (folder / "README.md").write_text("edited")
    assert folder_key(str(folder)) != before


def test_an_unusable_folder_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")  # past the folder check: the export child fails
    with pytest.raises(RuntimeError, match=r"ONNX export of .* failed: \w+Error: "):
        Embedder(str(tmp_path / "empty")).encode(["anything"])


def test_owning_process_never_loads_torch(spawn, workspace: Path) -> None:
    """A bridge that ingested, built the graph and answered retrievals has no torch in its memory."""
    client = spawn(workspace, env={**os.environ, "FLOWBABY_WORKER_IDLE_SEC": "600"})
    pid = client.result("health", timeout=60)["pid"]
    assert client.result("ingestForAgent", summary())["staged"]
    client.wait_idle(600)
    reply = client.result("retrieveForAgent", {"query": "Which TTL does the Redis session cache use?"})
    assert reply["success"] and reply["entries"][0]["topic"] == "Redis caching decision"
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "onnxruntime" in maps and "libtorch" not in maps


def test_importing_the_embedder_does_not_import_torch() -> None:
    code = (
        "import sys; from graph.core.settings import default_model_path; from graph.search.embedder import Embedder; "
        "Embedder(default_model_path()).encode(['x']); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
