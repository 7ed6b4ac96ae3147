"""ONNX Runtime embedder against the sentence-transformers (torch) model it was exported from,
and what it buys the owning process: idle memory and cold start to the first answered retrieval."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bridge.client import BridgeClient
from flowbaby.demo_data import DEMO_SUMMARIES
from tests.bench.ingest import python_ms, rss_mb, summarise_ms


def varied_sentences(locomo: Path | None, count: int = 1000, seed: int = 5) -> list[str]:
    """Real text of every length: LoCoMo dialogue turns, questions, session summaries and whole
    stretches of dialogue (10%, most over the 256 word pieces the model reads), and the demo's
    summaries and decisions."""
    pool: list[str] = []
    passages: list[str] = []
    for summary in DEMO_SUMMARIES:
        pool += [summary["topic"], summary["context"]]
        pool += [item for value in summary.values() if isinstance(value, list) for item in value]
    if locomo is not None and locomo.is_file():
        for raw in json.loads(locomo.read_text()):
            sessions = [turns for turns in raw["conversation"].values() if isinstance(turns, list)]
            for turns in sessions:
                pool += [turn["text"] for turn in turns]
                passages += [" ".join(turn["text"] for turn in turns[i : i + 12]) for i in range(0, len(turns), 12)]
            pool += [qa["question"] for qa in raw["qa"]]
            pool += list(raw["session_summary"].values())
    rng = random.Random(seed)
    pool = sorted({text for text in pool if text.strip()})
    long = rng.sample(sorted(set(passages)), min(len(passages), count // 10))
    return long + rng.sample(pool, min(len(pool), count - len(long)))


def compare_with_torch(model_path: str, texts: list[str], queries: int = 50) -> dict[str, Any]:
    """Cosine per sentence, and single-query latency of both in this process (interleaved)."""
    from sentence_transformers import SentenceTransformer

    from graph.search.embedder import Embedder

    onnx = Embedder(model_path)
    torch_model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
    onnx.load()

    def torch_encode(batch: list[str]) -> np.ndarray:
        return torch_model.encode(batch, batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    started = time.perf_counter()
    ours = np.asarray(onnx.encode(texts), dtype=np.float32)
    onnx_batch = time.perf_counter() - started
    started = time.perf_counter()
    theirs = torch_encode(texts)
    torch_batch = time.perf_counter() - started
    cosine = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
    onnx_ms, torch_ms = [], []
    for text in texts[-queries:]:  # short ones: a query
        started = time.perf_counter()
        onnx.encode([text])
        onnx_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        torch_encode([text])
        torch_ms.append((time.perf_counter() - started) * 1000)
    return {
        "sentences": len(texts),
        "cosine_min": round(float(cosine.min()), 6),
        "cosine_median": round(float(np.median(cosine)), 6),
        "single_query_onnx": summarise_ms(onnx_ms),
        "single_query_torch": summarise_ms(torch_ms),
        "single_query_p50_ratio_onnx_vs_torch": round(statistics.median(onnx_ms) / statistics.median(torch_ms), 2),
        "batch_sec_onnx": round(onnx_batch, 2),
        "batch_sec_torch": round(torch_batch, 2),
    }


_FOOTPRINT = """
import json, sys
from pathlib import Path
def rss():
    return int(next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS")).split()[1])
before = rss()
if sys.argv[1] == "onnx":
    from graph.search.embedder import Embedder
    encode = Embedder(sys.argv[2]).encode
else:
    from sentence_transformers import SentenceTransformer
    encode = SentenceTransformer(sys.argv[2], device="cpu", local_files_only=True).encode
encode(["warm up"])
warm = rss()
encode(json.loads(sys.stdin.read()))
print(json.dumps({"loaded_mb": round((warm - before) / 1024, 1), "after_batch_mb": round((rss() - before) / 1024, 1)}))
"""


def embedder_footprint(kind: str, model_path: str, texts: list[str]) -> dict[str, float]:
    """RSS one embedder adds to a bare process: loaded, and after encoding the sentences."""
    done = subprocess.run(
        [sys.executable, "-c", _FOOTPRINT, kind, model_path],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _client(workspace: Path, **env: str) -> BridgeClient:
    return BridgeClient(workspace, env={**os.environ, **env}, extra_args=["--shutdown-grace", "5"])


def bench_cold_retrieval(root: Path, runs: int = 5) -> dict[str, Any]:
    """Spawn to the first answered retrieveForAgent on a workspace holding the demo's summaries
    (the answer waits for the warm-up: model, LanceDB, catalog). Baseline, same run: a bare
    process importing the engine and lancedb (the floor that is not the embedder's)."""
    workspace = root / "cold-retrieval"
    workspace.mkdir()
    with _client(workspace, FLOWBABY_WORKER_IDLE_SEC="1") as client:
        for summary in DEMO_SUMMARIES:
            client.result("ingestForAgent", summary)
        client.wait_idle(600)
    starts = []
    for _ in range(runs):
        client = _client(workspace)
        reply = client.result("retrieveForAgent", {"query": "What TTL do we use for the Redis session cache?"})
        starts.append((time.perf_counter() - client.started) * 1000)
        assert reply["success"] and reply["entries"], reply
        client.close()
    floor = [python_ms("import graph.api, lancedb") for _ in range(runs)]
    cold, base = summarise_ms(starts), summarise_ms(floor)
    return {
        "first_retrieval": cold,
        "baseline_import_engine_and_lancedb": base,
        "p50_ratio_vs_baseline": round(cold["p50_ms"] / base["p50_ms"], 2),
    }


def bench_idle_after_work(root: Path) -> dict[str, Any]:
    """Bridge RSS idle after ingest (graph built, worker gone) and retrievals; torch must not be mapped."""
    workspace = root / "idle-after-work"
    workspace.mkdir()
    client = _client(workspace, FLOWBABY_WORKER_IDLE_SEC="3")
    try:
        pid = client.result("health", timeout=60)["pid"]
        for summary in DEMO_SUMMARIES:
            client.result("ingestForAgent", summary)
        client.wait_idle(600)
        for query in ("Redis session cache TTL", "permanent fix for E_LEDGER_LOCK", "who owns reconciliation"):
            assert client.result("retrieveForAgent", {"query": query})["success"]
        deadline = time.monotonic() + 60
        while (worker := client.result("health")["workerPid"]) and time.monotonic() < deadline:
            time.sleep(0.5)
        idle = rss_mb(pid)
        maps = Path(f"/proc/{pid}/maps").read_text()
    finally:
        client.close()
    return {
        "bridge_rss_idle_after_work_mb": idle,
        "worker_exited_idle": not worker,
        "torch_mapped": "libtorch" in maps,
        "onnxruntime_mapped": "onnxruntime" in maps,
    }


def run_onnx_benchmarks(root: Path, locomo: Path) -> dict[str, Any]:
    from graph.core.settings import default_model_path

    model = default_model_path()
    texts = varied_sentences(locomo)
    return {
        "parity_and_latency": compare_with_torch(model, texts),
        "embedder_rss_mb": {kind: embedder_footprint(kind, model, texts) for kind in ("onnx", "torch")},
        "cold_start_to_first_retrieval": bench_cold_retrieval(root),
        "idle_after_work": bench_idle_after_work(root),
    }
