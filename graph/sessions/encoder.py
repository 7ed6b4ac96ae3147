"""The encoder of session chunks and session queries: the memories' MiniLM, fused and int8.

A 3,000-message session is ~5,000 chunks and ~340,000 word pieces; the fp32 graph spends the
whole import encoding them. This file is derived locally, once per model export, from the same
exported graph the memories use (`graph.search.onnx_export`): ONNX Runtime's transformer fusion
(attention, layer norms, GELU), then dynamic int8 quantisation with per-channel weight scales.
The matrices fed by a GELU (the feed-forward output layers, whose inputs have outliers) stay fp32.
Short texts, where int8 drifts most and which cost least, stay fp32 (SHORT_TOKENS). The result
is checked against the fp32 graph on PROBES; below MIN_COSINE the fp32 graph is used instead, so
a session vector is never further than that from its fp32 vector. Session chunks and session
queries both go through this encoder (its variant is recorded with the vectors); memories and
their queries keep the fp32 graph alone.
Derivation runs in a child process, so `onnx` and the optimiser never load in the owner.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from graph.core.child_python import run_module
from graph.core.environment import Environment
from graph.core.files import write_atomic
from graph.search.embedder import Embedder
from graph.search.onnx_export import ensure_exported, export_key

DERIVE_VERSION = "1"
"""Bump when the derived file changes (fusion, quantisation settings, probes)."""

MODEL_FILE = "session-int8.onnx"
META_FILE = "session-int8.json"
MIN_COSINE = 0.99
"""Every probe's int8 vector must be at least this close to its fp32 vector."""
WORKERS = min(os.cpu_count() or 1, 4)
"""Batches of long texts encoded at once (ONNX Runtime sessions are safe to run concurrently)."""
SHORT_TOKENS = 24
"""Texts of at most this many word pieces (with [CLS] and [SEP]) are encoded in fp32."""

PROBES = [
    "Why does the nightly export job fail?",
    "The export hits the storage quota E_QUOTA_9931; raise it to 2 TB.",
    "[tool bash] pytest -q tests/unit",
    "[result bash] FAILED tests/unit/test_api.py::test_login - AssertionError: expected 200, got 401",
    "Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\n    main()\nKeyError: 'token'",
    "def handle(request):\n    return Response(status=204)",
    "Thanks, that fixed it!",
    "Done.",
    "The payments webhook retries were capped at 7 because the Stripe sandbox throttles at 8 per minute.",
    "git diff --stat\n src/cache.py | 14 ++++++++------\n 1 file changed, 8 insertions(+), 6 deletions(-)",
    "We moved the session cache to Redis with a fifteen minute TTL after the login latency regression, "
    "and kept the in-process LRU only for the feature flags, which change rarely and are read on every "
    "request; the migration plan is in docs/cache.md and the rollout is behind FLAG_REDIS_SESSIONS.",
    "Hey! I went hiking last weekend with my sister and we saw the most beautiful sunrise over the lake.",
    "[reasoning] The user wants the flaky test fixed, so first reproduce it with a fixed seed.",
    "npm ERR! code ERESOLVE unable to resolve dependency tree while resolving react@18.2.0",
    "SELECT session_key, count(*) FROM chunks GROUP BY session_key",
    "ls -la src\ntotal 24\ndrwxr-xr-x 2 dev dev 4096 main.py\n-rw-r--r-- 1 dev dev 812 util.py",
]


def derived(model_path: str) -> tuple[Path, dict[str, object]]:
    """The session model file and its meta, deriving them in a child process if missing."""
    folder = ensure_exported(model_path)
    meta_path = folder / META_FILE
    if not _current(meta_path):
        with (folder.parent / f"{folder.name}.session.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # an owner and a test starting together derive once
            if not _current(meta_path):
                run_module(f"Deriving the session model of {model_path}", "graph.sessions.encoder", model_path)
    meta: dict[str, object] = json.loads(meta_path.read_text())
    return folder / str(meta["file"]), meta


def _current(meta_path: Path) -> bool:
    if not meta_path.is_file():
        return False
    return bool(json.loads(meta_path.read_text()).get("derive_version") == DERIVE_VERSION)


class _Derived(Embedder):
    """The Embedder over the derived file (int8, or the fp32 graph when the check failed).

    Batches run side by side, one thread each, rather than one after another on all cores: on
    a busy machine a batch split over threads waits for the slowest of them at every operator
    (measured at load 12 on 2 cores: 1.4x the wall time and 1.6x the CPU time)."""

    intra_op_threads = 1

    def __init__(self, model_path: str) -> None:
        super().__init__(model_path)
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="session-encoder")

    def _model_file(self, folder: Path) -> Path:
        return derived(self.model_path)[0]

    def _run(self, session: Any, feeds: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
        if len(feeds) == 1:
            return [session.run(None, feeds[0])[0]]
        return list(self._pool.map(lambda feed: session.run(None, feed)[0], feeds))


class SessionEncoder:
    """Texts of more than SHORT_TOKENS word pieces run the int8 graph; shorter ones (most
    queries, "Done.", "Thanks!") run the memories' fp32 Embedder, where int8 drifts most and
    costs least to avoid. `variant` names the pair, so vectors of another variant are
    recognised and embedded again rather than compared with queries of this one."""

    def __init__(self, fp32: Embedder) -> None:
        self.fp32 = fp32
        self.model_path = fp32.model_path
        self._int8 = _Derived(fp32.model_path)

    @property
    def dimensions(self) -> int:
        return self.fp32.dimensions  # the int8 graph is derived from it: same size

    @property
    def variant(self) -> str:
        path, meta = derived(self.model_path)
        return f"{export_key(path.parent)}/{path.name}@{meta['derive_version']}:short{SHORT_TOKENS}"

    def encode(self, texts: list[str]) -> list[list[float]]:
        counter = self.fp32.tokenizer
        short = [counter.count_tokens(text) + 2 <= SHORT_TOKENS for text in texts]  # + [CLS] and [SEP]
        out: list[list[float]] = [[] for _ in texts]
        for flag, encoder in ((True, self.fp32), (False, self._int8)):
            rows = [i for i, is_short in enumerate(short) if is_short == flag]
            for i, vector in zip(rows, encoder.encode([texts[i] for i in rows]), strict=True):
                out[i] = vector
        return out


def derive(model_path: str) -> dict[str, object]:
    """Fuse and quantise the export's model.onnx into MODEL_FILE beside it; META_FILE says which file to use."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    folder = ensure_exported(model_path)
    source = folder / "model.onnx"
    fused = folder / f"session-fused.{os.getpid()}.onnx"
    partial = folder / f"{MODEL_FILE}.{os.getpid()}"
    try:
        optimize_model(str(source), model_type="bert", num_heads=0, hidden_size=0, opt_level=1).save_model_to_file(
            str(fused)
        )
        graph = onnx.load(str(fused), load_external_data=False).graph
        gelu_outputs = {out for node in graph.node if "Gelu" in node.op_type for out in node.output}
        keep_fp32 = [node.name for node in graph.node if node.op_type == "MatMul" and gelu_outputs & set(node.input)]
        quantize_dynamic(
            str(fused),
            str(partial),
            per_channel=True,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=keep_fp32,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        cosine = _min_cosine(model_path, source, partial)
        use = MODEL_FILE if cosine >= MIN_COSINE else "model.onnx"
        if use == MODEL_FILE:
            os.replace(partial, folder / MODEL_FILE)
    finally:
        fused.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    meta: dict[str, object] = {
        "file": use,
        "derive_version": DERIVE_VERSION,
        "derived_from": source.name,
        "min_probe_cosine": round(cosine, 5),
        "fp32_kept": keep_fp32,
    }
    write_atomic(folder / META_FILE, json.dumps(meta, indent=2))
    return meta


def _min_cosine(model_path: str, reference: Path, candidate: Path) -> float:
    """The lowest cosine between the two graphs' vectors of PROBES."""

    class _Fixed(Embedder):
        def __init__(self, path: Path) -> None:
            super().__init__(model_path)
            self._file = path

        def _model_file(self, folder: Path) -> Path:
            return self._file

    counter = Embedder(model_path).tokenizer
    long = [probe for probe in PROBES if counter.count_tokens(probe) + 2 > SHORT_TOKENS]
    ref = np.asarray(_Fixed(reference).encode(long))
    got = np.asarray(_Fixed(candidate).encode(long))
    return float((ref * got).sum(axis=1).min())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.sessions.encoder", description=__doc__)
    parser.add_argument("model", nargs="?", help="sentence-transformers folder (default: the configured model)")
    args = parser.parse_args()
    if args.model is None:
        from graph.core.settings import default_model_path

        args.model = Environment.read().get("FLOWBABY_EMBEDDING_MODEL") or default_model_path()
    print(json.dumps(derive(args.model), indent=2))


if __name__ == "__main__":
    main()
