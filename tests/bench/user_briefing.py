"""`make bench --only user_briefing` (issue 50 item 5): the briefing's cost when the user store is owned by
another process. Project A's bridge stores the person's preferences (and so owns the user store); project
B's bridge then briefs, reaching the user store through A's socket. Reported: B's briefing round trip,
p50 / p95, and the preferences it listed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from tests.bench.reconcile import percentile

HABITS = ["uv for Python packages", "ruff for linting", "pytest for tests", "Conventional Commits", "tabs in Go"]


def run_user_briefing(root: Path, preferences: int = 12, calls: int = 40) -> dict[str, Any]:
    a, b = root / "a", root / "b"
    for folder in (a, b):
        folder.mkdir(parents=True)
    env = {**os.environ, "FLOWBABY_USER_STORE": str(root / "user"), "FLOWBABY_BUILD_GRAPH": "0"}
    owner = BridgeClient(a, env=env, extra_args=["--rate-limit-per-minute", "0"])
    try:
        for i in range(preferences):
            habit = HABITS[i % len(HABITS)]
            fields = {"topic": f"Habit {i}", "context": f"The person's habit {i}.", "decisions": [f"Use {habit} ({i})"]}
            owner.result("storeMemory", {**fields, "metadata": {"topicId": f"habit-{i}"}, "scope": "user"})
        other = BridgeClient(b, env=env, extra_args=["--rate-limit-per-minute", "0"])
        try:
            items = other.result("briefing", {}, timeout=300)["items"]  # warm: B reaches the user store's owner
            held = json.loads((root / "user" / ".flowbaby" / "owner.json").read_text())["pid"]
            assert held == owner.proc.pid, "the user store is not owned by the other process"
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                other.result("briefing", {}, timeout=60)
                times.append((time.perf_counter() - started) * 1000)
        finally:
            other.close()
    finally:
        owner.close()
    return {
        "preferences": sum(item.get("section") == "preferences" for item in items),
        "calls": calls,
        "briefing_p50_ms": percentile(times, 0.5),
        "briefing_p95_ms": percentile(times, 0.95),
        "loadavg": round(os.getloadavg()[0], 1),
    }
