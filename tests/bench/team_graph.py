"""Graph building per summary on the team backend (cognee's relational data and its postgres
graph in Postgres) against the embedded default (SQLite, Ladybug), same run,
same offline extractor, through the real bridge: a first summary (worker start, databases
created), then a burst of summaries staged together. Backends alternate round by round.

    python -m tests.bench.team_graph [--burst 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from tests.bench.ingest import _ingest_and_wait, synthetic_summary
from tests.support.postgres import PostgresServer


def build_burst(root: Path, env: dict[str, str], burst: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    client = BridgeClient(root, env=env, extra_args=["--shutdown-grace", "5"])
    try:
        client.result("health", timeout=120)
        first_sec, _ = _ingest_and_wait(client, [synthetic_summary(0, rng)])
        wall, ops = _ingest_and_wait(client, [synthetic_summary(1 + i, rng) for i in range(burst)])
        batches = {op["metrics"]["batchId"]: op["metrics"] for op in ops}
        cognee = sum(m["addSec"] + m["cognifySec"] for m in batches.values())
        projection = sum(m["projectionSec"] for m in batches.values())
    finally:
        client.close()
    return {
        "first_operation_sec": round(first_sec, 2),
        "burst_wall_sec": round(wall, 2),
        "sec_per_summary": round(wall / burst, 3),
        "cognee_sec_per_summary": round(cognee / burst, 3),
        "projection_sec_per_summary": round(projection / burst, 4),
        "batches": len(batches),
    }


def run(burst: int, rounds: int) -> dict[str, Any]:
    server = PostgresServer.start(durable=True)
    root = Path(tempfile.mkdtemp(prefix="flowbaby-team-graph-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    base.update(FLOWBABY_MAX_RUNNING="100", FLOWBABY_MAX_QUEUED="100", FLOWBABY_WORKER_IDLE_SEC="600")
    results: dict[str, list[dict[str, Any]]] = {"embedded": [], "postgres": []}
    try:
        for round_ in range(rounds):
            order = ["embedded", "postgres"] if round_ % 2 == 0 else ["postgres", "embedded"]
            for backend in order:
                env = dict(base)
                if backend == "postgres":
                    env.update(FLOWBABY_DATABASE_URL=server.url(), FLOWBABY_NAMESPACE=f"bench{uuid.uuid4().hex[:8]}")
                folder = root / f"{backend}-{round_}"
                folder.mkdir()
                results[backend].append(build_burst(folder, env, burst, seed=round_))
    finally:
        server.remove()
        shutil.rmtree(root, ignore_errors=True)
    per = {b: statistics.median(r["sec_per_summary"] for r in runs) for b, runs in results.items()}
    cognee = {b: statistics.median(r["cognee_sec_per_summary"] for r in runs) for b, runs in results.items()}
    return {
        "burst": burst,
        "runs": results,
        "median_sec_per_summary": per,
        "median_cognee_sec_per_summary": cognee,
        "postgres_vs_embedded": round(per["postgres"] / per["embedded"], 2),
        "postgres_vs_embedded_cognee": round(cognee["postgres"] / cognee["embedded"], 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(run(args.burst, args.rounds), indent=2))
