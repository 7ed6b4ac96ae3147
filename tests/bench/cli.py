"""`make bench` section `cli` (issue 46): how long `flowbaby` commands take from the shell.

Each command is a real process, timed from start to exit: `--version` and `--help`; with a bridge
owning the workspace, `search`, `memories list` and the forget of one memory (`--yes`), each forget
meeting a cold cognee worker (FLOWBABY_WORKER_IDLE_SEC=3, and a pause longer than that before it:
a user forgets something minutes after the last store); then, with nothing running, `memories
list`, `search` and a forget. Median and p95 per command, with the load average (os.getloadavg)
before and after each. Bytecode is cached in a temporary PYTHONPYCACHEPREFIX and one warm-up run
is dropped, as after an install (this environment may set PYTHONDONTWRITEBYTECODE).

FLOWBABY_BENCH_CLI_CODE=<checkout> times another checkout's code (its bridge too) in the same
period, for a before/after pair (docs/measurements.md keeps only the current figures). A command that
checkout lacks is reported as such.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary

RUNS = 15
SLOW_RUNS = 3
FORGETS = 5
WORKER_IDLE_SEC = 3.0
QUERY = "which cache keeps the sessions and for how long"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


class _Cli:
    def __init__(self, code: Path, cache: Path) -> None:
        self.code = code
        self.env = {**os.environ, "PYTHONPATH": str(code), "PYTHONPYCACHEPREFIX": str(cache)}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(self, *args: str, stdin: str = "") -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-P", "-c", "from flowbaby.cli import main; main()", *args],  # -P: as the launcher
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=tempfile.gettempdir(),
            timeout=600,
        )
        return time.perf_counter() - started, done

    def time(self, runs: int, args: Callable[[int], list[str]], pause: float = 0.0) -> dict[str, Any]:
        """`runs` timed runs after one warm-up (its bytecode written); exit codes must be 0."""
        load = [round(os.getloadavg()[0], 2)]
        warm, first = self.run(*args(0))
        if first.returncode != 0:
            return {"unavailable": f"exit {first.returncode}: {first.stderr.strip()[-300:]}"}
        seconds = []
        for n in range(1, runs + 1):
            time.sleep(pause)
            took, done = self.run(*args(n))
            if done.returncode != 0:
                raise RuntimeError(f"flowbaby {' '.join(args(n))}: {done.stderr[-500:]}")
            seconds.append(took)
        load.append(round(os.getloadavg()[0], 2))
        return {
            "runs": runs,
            "medianSec": round(statistics.median(seconds), 3),
            "p95Sec": _pct(seconds, 0.95),
            "maxSec": round(max(seconds), 3),
            "warmUpSec": round(warm, 3),
            "load1m": load,
        }


def run_cli(root: Path) -> dict[str, Any]:
    code = Path(os.environ.get("FLOWBABY_BENCH_CLI_CODE") or PROJECT_ROOT).resolve()
    workspace = root / "ws"
    workspace.mkdir()
    ws = ["--workspace", str(workspace)]
    with tempfile.TemporaryDirectory(prefix="flowbaby-bench-pyc-") as cache:
        cli = _Cli(code, Path(cache))
        report: dict[str, Any] = {"code": str(code), "cpus": os.cpu_count()}
        report["version"] = cli.time(RUNS, lambda n: ["--version"])
        report["help"] = cli.time(RUNS, lambda n: ["--help"])
        topics = FORGETS + SLOW_RUNS + 2
        env = {**os.environ, "FLOWBABY_WORKER_IDLE_SEC": str(WORKER_IDLE_SEC), "FLOWBABY_MAX_QUEUED": "100"}
        log = open(root / "bridge.stderr", "wb")  # noqa: SIM115 (closed below)
        # The bridge runs `code` too: `env` execs it with that checkout first on its path.
        client = BridgeClient(
            workspace,
            env=env,
            stderr=log,
            wrapper=["env", f"PYTHONPATH={code}"],
            extra_args=["--rate-limit-per-minute", "0"],  # the searches come faster than an agent's
        )
        try:
            for n in range(topics):
                payload = summary(f"topic-{n}", topic=f"Cache decision {n}", context=f"Option {n} for the cache.")
                assert client.result("ingestForAgent", payload)["success"]
            client.wait_idle(600)
            owned: dict[str, Any] = {}
            owned["search"] = cli.time(RUNS, lambda n: ["search", QUERY, *ws])
            owned["memoriesList"] = cli.time(RUNS, lambda n: ["memories", "list", *ws])
            owned["status"] = cli.time(RUNS, lambda n: ["status", *ws])
            owned["forgetColdWorker"] = cli.time(
                FORGETS - 1, lambda n: ["memories", "forget", f"topic-{n}", "--yes", *ws], pause=WORKER_IDLE_SEC + 3
            )
            report["serviceRunning"] = owned
        finally:
            client.close()
            log.close()
        alone: dict[str, Any] = {}
        alone["memoriesList"] = cli.time(SLOW_RUNS, lambda n: ["memories", "list", *ws])
        alone["search"] = cli.time(SLOW_RUNS, lambda n: ["search", QUERY, *ws])
        alone["forget"] = cli.time(
            SLOW_RUNS - 1, lambda n: ["memories", "forget", f"topic-{FORGETS + n}", "--yes", *ws]
        )
        report["noService"] = alone
    return report
