"""Issue 58, robustness: a refused file ends a command with its one-line refusal, or is left out of an
answer with a note, never with a traceback or an HTTP 500.

- `flowbaby memories list` (and `search`, `status`) on a folder whose `link.json` flowbaby did not write
  ended in a Python traceback; now `flowbaby <command>: INVALID_WORKSPACE_PATH: Refusing the link file …`,
  exit 3 (docs/contract/16-command-line.md).
- A refused session index made a retrieval with `includeSessions` answer HTTP 500, and `flowbaby search
  --sessions` exit 1; now the memories' answer comes with `sessionsNotSearched` (INGEST_CONTRACT.md 3.5).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.integration.test_http_api import Server
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

DECISION = "Retry failed card charges 4 times with exponential backoff"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline", "FLOWBABY_BUILD_GRAPH": "0"}


def test_a_refused_link_file_ends_each_command_with_its_refusal(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "clone", tmp_path / "elsewhere"
    (folder / ".flowbaby").mkdir(parents=True)
    elsewhere.mkdir()
    link = folder / ".flowbaby" / "link.json"
    link.write_text(json.dumps({"workspace": str(elsewhere)}))
    link.chmod(0o600)  # as git writes it under umask 077: only the missing seal tells
    for command in (("memories", "list"), ("memories", "show", "some-topic"), ("search", "card retries"), ("status",)):
        done = run_flowbaby(*command, "--workspace", str(folder), env=_env(), timeout=120)
        name = command[0]
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"flowbaby {name}: INVALID_WORKSPACE_PATH: "), done.stderr
        assert f"Refusing the link file {link}" in lines[0], done.stderr
    assert not (elsewhere / ".flowbaby").exists()


def test_a_refused_session_index_leaves_the_memories_answer_with_a_note(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    with BridgeClient(workspace, env=_env()) as bridge:
        bridge.result(
            "ingestForAgent", {"topic": "Card charge retries", "context": "Billing.", "decisions": [DECISION]}
        )
    index = workspace / ".flowbaby" / "sessions" / "index.sqlite"
    assert index.exists()
    (workspace / ".flowbaby" / "sessions" / "index.sqlite.seal").write_text("0" * 64 + "\n")  # not flowbaby's
    refusal = f"Refusing the session index {index}"
    searched = run_flowbaby("search", "--sessions", "card charge retries", "--workspace", str(workspace), env=_env())
    assert searched.returncode == 0, (searched.stdout, searched.stderr)
    assert DECISION in searched.stdout and f"sessions not searched: Sessions were not searched: {refusal}" in (
        searched.stdout
    ), searched.stdout
    server = Server(workspace, env=_env())
    try:
        server.wait_ready()
        token = (workspace / ".flowbaby" / "api_token").read_text().strip()
        reply = httpx.post(
            f"{server.url}/api/agent/retrieve",
            json={"query": "card charge retries", "includeSessions": True},
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        )
    finally:
        server.stop()
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert DECISION in json.dumps(body["entries"]) and refusal in body["sessionsNotSearched"], body
