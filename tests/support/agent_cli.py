"""What the Codex CLI and Gemini CLI tests share: the two pinned clients, a running `flowbaby serve`
on the test's project holding two memories, and the checks on what the hooks and tools did."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bridge.client import BridgeClient
from tests.integration.test_http_api import Server

CODEX = ("@openai/codex", "0.169.0", "codex")
GEMINI = ("@google/gemini-cli", "0.61.0", "gemini")
COPILOT = ("@github/copilot", "1.0.102", "copilot")

DECISION = "Retry failed card charges 4 times with exponential backoff starting at 45 seconds"
FACT = "The staging database password rotates every Friday at 17:00 UTC, from the ops vault."
"""A memory with no decisions or next steps: not in the briefing, so only recall can bring it."""
WEBHOOKS = "We decided to retry outgoing webhooks 6 times with jittered backoff capped at 10 minutes."
STORED_TOPIC = "Ledger export cadence"
STORED_DECISION = "Export the ledger to the warehouse every 15 minutes, not hourly"


@contextmanager
def served(project: Path, env: dict[str, str]) -> Iterator[tuple[Server, dict[str, str]]]:
    """`flowbaby serve` on `project` with DECISION's and FACT's memories stored and searchable."""
    server = Server(
        project,
        "--rate-limit-per-minute",
        "0",
        env={k: v for k, v in env.items() if k.startswith(("HOME", "CODEX_", "GEMINI_", "XDG_DATA", "XDG_CONFIG"))}
        | {"XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")},
    )
    try:
        server.wait_ready()
        headers = {"Authorization": f"Bearer {(project / '.flowbaby' / 'api_token').read_text().strip()}"}
        memories = [
            {
                "topic": "Card charge retry policy",
                "context": "How the billing worker retries failed card charges against the payment provider.",
                "decisions": [DECISION],
                "agentName": "opencode",
            },
            {"topic": "Staging database credentials", "context": FACT, "agentName": "opencode"},
        ]
        for memory in memories:
            stored = httpx.post(f"{server.url}/api/agent/memories", headers=headers, json=memory, timeout=60)
            assert stored.status_code == 202, stored.text
        until(lambda: retrieve(server, headers, "card charge retry policy"), "the memory is searchable")
        until(lambda: retrieve(server, headers, "staging database password rotation"), "the memory is searchable")
        yield server, headers
    finally:
        server.stop()


def retrieve(server: Server, headers: dict[str, str], query: str) -> list[dict[str, Any]]:
    reply = httpx.post(f"{server.url}/api/agent/retrieve", headers=headers, json={"query": query}, timeout=60)
    entries: list[dict[str, Any]] = reply.json().get("entries", [])
    return entries


def until(check: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting until {what}")


def captured(project: Path, env: dict[str, str], client: str) -> dict[str, Any]:
    """The memory captured from the client's session about WEBHOOKS, as the bridge retrieves it."""
    with BridgeClient(project, env=env, extra_args=["--rate-limit-per-minute", "0"]) as bridge:

        def found() -> dict[str, Any] | None:
            reply = bridge.result("retrieveForAgent", {"query": "how often do we retry outgoing webhooks"})
            return next((e for e in reply["entries"] if e["topicId"].startswith(f"session-{client}-")), None)

        entry: dict[str, Any] = until(found, "the captured session is retrievable through the bridge")
    return entry


def session_search(server: Server, headers: dict[str, str], source: str, question: str) -> list[dict[str, Any]]:
    """Vapor's API on the client's newest session of the project: imported, then searched."""
    current = httpx.get(
        f"{server.url}/api/agent/current-session", params={"source": source}, headers=headers, timeout=60
    ).json()
    assert current["source"] == source, current
    sid = current["session_id"]
    imported = httpx.post(f"{server.url}/api/agent/sessions/{sid}/import", headers=headers, timeout=120).json()
    assert imported["index_status"]["status"] == "ready", imported
    found = httpx.get(
        f"{server.url}/api/agent/search", params={"q": question, "session_id": sid, "limit": 5}, headers=headers
    ).json()
    results: list[dict[str, Any]] = found["results"]
    return results
