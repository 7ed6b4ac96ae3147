"""`make bench` section `service` (issue 46): the workspace's service from nothing running.

- `hookColdBriefingSec`: a `SessionStart` hook (`python -S flowbaby/hook.py`, as installed) in a
  workspace where nothing runs, until it printed the briefing (it starts the service and waits);
  `recallAfterSec`: the first prompt's recall right after it.
- `sigtermExitSec`: SIGTERM to the service while a graph batch runs, until the process is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary

HOOK = str(PROJECT_ROOT / "flowbaby" / "hook.py")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline"}


def _flowbaby(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from flowbaby.cli import main; main()", *args, "--workspace", str(workspace)]
    return subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=120)


def _hook(workspace: Path, event: str, payload: dict[str, Any]) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-S", HOOK, event, "--workspace", str(workspace)],
        input=json.dumps(payload),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout, time.perf_counter() - started


def _gone(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _cold_briefings(root: Path, runs: int) -> dict[str, Any]:
    workspace = root / "cold"
    workspace.mkdir()
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    with BridgeClient(workspace, env=_env()) as bridge:
        fields = {"topic": "Card charge retries", "context": "Billing.", "decisions": ["Retry 4 times"]}
        bridge.result("ingestForAgent", {**fields, "agentName": "bench"})
    briefing, recall = [], []
    for run in range(runs):
        text, took = _hook(workspace, "SessionStart", {"session_id": f"b{run}"})
        assert "Retry 4 times" in text, text
        briefing.append(round(took, 3))
        _, took = _hook(workspace, "UserPromptSubmit", {"session_id": f"r{run}", "prompt": "card charge retries"})
        recall.append(round(took, 3))
        assert _flowbaby(workspace, "stop").returncode == 0
    return {"hookColdBriefingSec": briefing, "recallAfterSec": recall}


def _sigterm_exits(root: Path, runs: int) -> list[float]:
    exits = []
    for run in range(runs):
        workspace = root / f"graph{run}"
        workspace.mkdir()
        assert _flowbaby(workspace, "start").returncode == 0
        record = json.loads((workspace / ".flowbaby" / "service.json").read_text())
        url = f"http://127.0.0.1:{record['port']}"
        auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
        httpx.post(f"{url}/api/agent/ingest", json=summary(), headers=auth, timeout=30)
        deadline = time.monotonic() + 120
        while not httpx.get(f"{url}/api/agent/background", headers=auth, timeout=10).json()["counts"].get("running"):
            assert time.monotonic() < deadline, "no batch ran"
            time.sleep(0.1)
        time.sleep(1.0)
        signalled = time.perf_counter()
        os.kill(record["pid"], signal.SIGTERM)
        while not _gone(record["pid"]):
            time.sleep(0.02)
        exits.append(round(time.perf_counter() - signalled, 3))
        with BridgeClient(workspace, env=_env()) as bridge:  # the parked batch runs here; leave nothing
            bridge.wait_idle(timeout=300)
    return exits


def run_service(root: Path) -> dict[str, Any]:
    return {**_cold_briefings(root, 3), "sigtermExitSec": _sigterm_exits(root, 2)}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(run_service(Path(folder)), indent=2))
