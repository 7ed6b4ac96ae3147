"""Issue 50 item 6 through a real bridge: the briefing and per-prompt recall show only current
decisions, one per subject. A memory that a newer one (another topicId) replaces, by the closeness the
supersession suggestions use, and a memory whose decisions a newer one restates word for word, are
left out of both, with no budget spent on them; a decision on another subject stays."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from flowbaby.hook_install import hook_command
from tests.support.store_only import store_only_workspace


def _hook(workspace: Path, event: str, payload: dict[str, Any]) -> str:
    """The installed hook command, as Claude Code runs it, against the bridge that owns the workspace."""
    command = shlex.split(hook_command(event, workspace, "claude-code"))
    done = subprocess.run(command, input=json.dumps(payload), capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def _memory(topic_id: str, topic: str, decision: str, day: int) -> dict[str, Any]:
    stamp = f"2026-11-{day:02d}T10:00:00Z"
    return {
        "topic": topic,
        "context": f"{topic}, as decided on day {day}.",
        "decisions": [decision],
        "agentName": "claude-code",
        "metadata": {"topicId": topic_id, "createdAt": stamp, "updatedAt": stamp, "status": "Active"},
    }


OLD_STORE = "Keep the mobile app's offline data in Realm"
NEW_STORE = "Moved the mobile app's offline store from Realm to SQLite"
RESTATED = "Run database migrations with Alembic before every deploy"
OTHER = "Publish API docs with Redoc on every release"


def test_the_briefing_and_recall_show_one_current_decision_per_subject(
    spawn: Callable[..., BridgeClient], tmp_path: Path
) -> None:
    workspace = store_only_workspace(tmp_path / "ws")
    client = spawn(workspace, "--rate-limit-per-minute", "0")
    for payload in (
        _memory("offline-realm", "Offline storage", OLD_STORE, 1),
        _memory("offline-sqlite", "Mobile storage migration", NEW_STORE, 20),
        _memory("migrations-a", "Schema migrations", RESTATED, 2),
        _memory("migrations-b", "Deploy checklist", RESTATED, 18),
        _memory("api-docs", "Developer docs", OTHER, 3),
    ):
        assert client.result("ingestForAgent", payload)["success"]
    pairs = client.result("listImpliedSupersessions", {})["pairs"]
    assert [(p["older"]["topicId"], p["newer"]["topicId"]) for p in pairs] == [("offline-realm", "offline-sqlite")]

    brief = client.result("briefing", {"agentName": "opencode"})
    shown = [item["topicId"] for item in brief["items"]]
    assert {"offline-sqlite", "migrations-b", "api-docs"} <= set(shown)
    assert "offline-realm" not in shown and "migrations-a" not in shown, brief["text"]
    assert OLD_STORE not in brief["text"] and brief["text"].count(RESTATED) == 1

    found = client.result("retrieveForAgent", {"query": "Where does the mobile app keep its offline data?"})
    assert {"offline-realm", "offline-sqlite"} <= {e["topicId"] for e in found["entries"]}  # retrieval keeps both
    recalled = _hook(
        workspace, "UserPromptSubmit", {"session_id": "s1", "prompt": "Where does the mobile app keep offline data?"}
    )
    assert "offline-sqlite" in recalled and "offline-realm" not in recalled, recalled
    assert OLD_STORE not in recalled
    again = _hook(
        workspace, "UserPromptSubmit", {"session_id": "s2", "prompt": "Do we run Alembic migrations before deploys?"}
    )
    assert "migrations-b" in again and "migrations-a" not in again, again
