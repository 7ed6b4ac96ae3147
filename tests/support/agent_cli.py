"""What the tests of real agent clients with flowbaby's hooks share (Claude Code, OpenCode, Codex CLI,
Gemini CLI): the pinned clients, the client's project beside its fake model, a running `flowbaby serve`
on the project holding two memories, and the checks on what the hooks and tools did."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

import httpx

from bridge.client import BridgeClient
from tests.integration.test_http_api import Server
from tests.support.client_env import flowbaby_install, isolated_env, run_client
from tests.support.loopback_server import ScriptedModel

CODEX = ("@openai/codex", "0.169.0", "codex")
GEMINI = ("@google/gemini-cli", "0.61.0", "gemini")
COPILOT = ("@github/copilot", "1.0.102", "copilot")

DECISION = "Retry failed card charges 4 times with exponential backoff starting at 45 seconds"
FACT = "The staging database password rotates every Friday at 17:00 UTC, from the ops vault."
"""A memory with no decisions or next steps: not in the briefing, so only recall can bring it."""
WEBHOOKS = "We decided to retry outgoing webhooks 6 times with jittered backoff capped at 10 minutes."
STORED_TOPIC = "Ledger export cadence"
STORED_DECISION = "Export the ledger to the warehouse every 15 minutes, not hourly"
STORED_MEMORY = {
    "topic": STORED_TOPIC,
    "context": "The finance team needs fresher numbers than the hourly export gave them during close.",
    "decisions": [STORED_DECISION],
}
"""What a scripted tool call stores over MCP."""

Model = TypeVar("Model", bound=ScriptedModel)


class AgentProject(Generic[Model]):
    """A real client's project for one test module: graph building off in its `.env` (nothing here reads
    the graph), the client's own environment under `root` (`environment`), and the fake model it talks to."""

    client: ClassVar[tuple[str, str, str]]
    """The pinned npm package the subclass runs (package, version, binary)."""
    fake: ClassVar[Callable[[], ScriptedModel]]
    """The fake model API the client is pointed at."""

    def __init__(self, root: Path, model: Model) -> None:
        self.root, self.project, self.model = root, root / "project", model
        self.project.mkdir()
        (self.project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
        self.env = self.environment()

    def environment(self) -> dict[str, str]:
        """The client's environment, pointed at `model`; a subclass writes the client's settings here too."""
        return isolated_env(self.root)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """One non-interactive run of the client in the project; it must succeed."""
        return run_client(self.client, list(args), self.project, self.env)

    @classmethod
    @contextmanager
    def serving(cls, root: Path, *install: str) -> Iterator[tuple[Self, Server, dict[str, str]]]:
        """The client's project under `root`, its fake model running, after `flowbaby install INSTALL` (as
        its user runs it), with `served` on it: what a test module's fixture yields."""
        with cls.fake() as model:
            client = cls(root, model)  # type: ignore[arg-type]
            flowbaby_install(client.project, client.env, *install)
            with served(client.project, client.env) as (server, headers):
                yield client, server, headers


@contextmanager
def served(project: Path, env: dict[str, str]) -> Iterator[tuple[Server, dict[str, str]]]:
    """`flowbaby serve` on `project` with DECISION's and FACT's memories stored and searchable."""
    server = Server(
        project,
        "--rate-limit-per-minute",
        "0",
        # The real cache for the model's ONNX export (graph.search.onnx_export), or the server exports it
        # again into the test's HOME (~30 s of CPU).
        env={
            k: v
            for k, v in env.items()
            if k.startswith(("HOME", "CLAUDE_", "CODEX_", "GEMINI_", "XDG_DATA", "XDG_CONFIG"))
        }
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


def assert_briefed_and_recalled(first_request: str) -> None:
    """The model's first request of a session (as JSON text) holds the memories `served` stored."""
    assert DECISION in first_request, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first_request and FACT in first_request, "the recall holds the fact"


def until_stored(server: Server, headers: dict[str, str], what: str) -> None:
    """STORED_MEMORY, which a scripted tool call stored, comes back from retrieval."""

    def stored() -> bool:
        return any(
            STORED_DECISION in json.dumps(e) for e in retrieve(server, headers, "how often is the ledger exported")
        )

    until(stored, what)


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


def assert_captured_and_searchable(
    project: AgentProject[Any], server: Server, headers: dict[str, str], source: str
) -> None:
    """After a session that stated WEBHOOKS: its decision is a captured memory, and the session itself is
    indexed and searchable as conversation (the briefing the hooks injected is not)."""
    entry = captured(project.project, project.env, source)
    assert any("retry outgoing webhooks 6 times" in d for d in entry["decisions"])
    results = session_search(server, headers, source, "how many times do we retry outgoing webhooks")
    assert results and "retry outgoing webhooks 6 times" in results[0]["chunk_text"]
    every = json.dumps(session_search(server, headers, source, "staging database password ops vault"))
    assert "Flowbaby workspace memory" not in every
