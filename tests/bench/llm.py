"""Graph building through an LLM over HTTP vs the offline provider, in the same run.

Both go through a real bridge and cognee worker; the "LLM" is tests/support/fake_openai.py on
loopback, which answers with the offline extractor, so the difference between the two
is the cost of the route (litellm's OpenAI client, HTTP, JSON parsing), not of a model.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from flowbaby.demo_data import DEMO_SUMMARIES
from tests.support.fake_openai import FakeOpenAI

SUMMARIES = 10


def _per_summary(root: Path, env_text: str) -> dict[str, Any]:
    """Stage the demo summaries one at a time, each waited for, and report per-summary costs.
    The first one also starts the worker and creates cognee's databases: reported apart."""
    root.mkdir()
    (root / ".env").write_text(env_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    trusted = {"FLOWBABY_TRUSTED_WORKSPACES": str(root)}  # its .env chooses the LLM
    client = BridgeClient(
        root, env={**env, **trusted, "FLOWBABY_WORKER_IDLE_SEC": "600"}, extra_args=["--shutdown-grace", "5"]
    )
    ops: list[dict[str, Any]] = []
    walls: list[float] = []
    try:
        client.result("health", timeout=60)
        for summary in DEMO_SUMMARIES[:SUMMARIES]:
            started = time.perf_counter()
            reply = client.result("ingestForAgent", summary)
            client.wait_idle(600, poll=0.05)
            walls.append(time.perf_counter() - started)
            op = client.result("backgroundStatus", {"operationId": reply["operationId"]})
            assert op["status"] == "completed", op
            ops.append(op["metrics"])
        usage = client.result("backgroundStatus")["llmUsage"]
    finally:
        client.close()
    warm = ops[1:]

    def median(key: str) -> float:
        return round(statistics.median(m[key] for m in warm), 3)

    return {
        "summaries": len(ops),
        "first_cognee_sec": round(ops[0]["addSec"] + ops[0]["cognifySec"], 3),
        "cognify_sec_per_summary_median": median("cognifySec"),
        "add_sec_per_summary_median": median("addSec"),
        "wall_sec_per_summary_median": round(statistics.median(walls[1:]), 3),
        "llm_sec_per_summary_median": median("llmSec"),
        "llm_calls_per_summary": round(usage["calls"] / len(ops), 2),
        "prompt_tokens_per_summary": round(usage["promptTokens"] / len(ops), 1),
        "completion_tokens_per_summary": round(usage["completionTokens"] / len(ops), 1),
        "llm_usage_total": usage,
    }


def run_llm_benchmarks(root: Path) -> dict[str, Any]:
    offline = _per_summary(root / "offline", "LLM_PROVIDER=offline\n")
    with FakeOpenAI() as server:
        loopback = _per_summary(
            root / "loopback", f"LLM_PROVIDER=custom\nLLM_MODEL=fake-extractor\nLLM_ENDPOINT={server.url}\n"
        )
        loopback["server_requests"] = server.calls()
    return {
        "offline": offline,
        "loopback_http": loopback,
        "cognify_ratio_http_vs_offline": round(
            loopback["cognify_sec_per_summary_median"] / offline["cognify_sec_per_summary_median"], 2
        ),
    }
