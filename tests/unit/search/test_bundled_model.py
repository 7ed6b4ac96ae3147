"""The wheel's bundled MiniLM (release/wheel.py's bundle_model): a model folder carrying its own ONNX export
in `onnx/` runs from it, with no torch, no export child and nothing written to the user's cache, and gives
the same vectors and the same session-encoder variant as the checkout's exported folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from graph.search.onnx_export import SHIPPED, ensure_exported, shipped_export
from graph.sessions.encoder import SessionEncoder
from release.wheel import bundle_model

TEXTS = ["What TTL does the session cache use?", "We moved the session cache to Redis with a fifteen minute TTL " * 3]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bundle") / "all-MiniLM-L6-v2"
    bundle_model(Path(default_model_path()), folder)
    return folder


def test_a_bundled_folder_runs_from_its_own_export(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = default_model_path()
    expected = np.asarray(Embedder(source).encode(TEXTS))
    variant = SessionEncoder(Embedder(source)).variant
    assert not any(p.suffix == ".safetensors" for p in bundled.rglob("*"))  # torch's weights stay out of the wheel
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # an empty cache: an export would land here

    assert ensure_exported(str(bundled)) == bundled / SHIPPED
    np.testing.assert_allclose(np.asarray(Embedder(str(bundled)).encode(TEXTS)), expected, atol=1e-6)
    encoder = SessionEncoder(Embedder(str(bundled)))
    assert encoder.variant == variant  # session vectors made by a checkout are kept by the installed wheel
    assert len(encoder.encode(TEXTS)[1]) == 384
    assert not (tmp_path / "cache").exists()


def test_an_export_of_another_version_is_not_used(bundled: Path, tmp_path: Path) -> None:
    stale = tmp_path / "stale"
    (stale / SHIPPED).mkdir(parents=True)
    meta = json.loads((bundled / SHIPPED / "meta.json").read_text())
    (stale / SHIPPED / "meta.json").write_text(json.dumps({**meta, "export_version": "0"}))
    assert shipped_export(str(bundled)) == bundled / SHIPPED
    assert shipped_export(str(stale)) is None
    with pytest.raises(RuntimeError, match="no config.json"):  # so it would be exported like any folder
        ensure_exported(str(stale))
