"""The person's preferences captured into their user store (issue 49 item 1): Claude Code's Stop hook, as
installed, asks the bridge that owns the workspace for a capture; with FLOWBABY_CAPTURE_USER_PREFERENCES=1
in the owner's environment each preference the person stated becomes a user memory (scope user, read in
every project) and stays out of the project's capture, whose own decisions are kept; said again in a
later turn, it is not stored twice. Without the switch the same session leaves the user store untouched."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from graph.capture.session_capture import topic_id_for
from tests.integration.test_service_lifecycle import _hook
from tests.unit.capture.test_hook_capture import Transcript

PREFERENCE = "I always use uv, never pip."
STYLE = "Commit messages in the imperative, please."
DECISION = "Let's keep the invoices in S3 with a 10 year lifecycle."


def _stop(workspace: Path, talk: Transcript, env: dict[str, str]) -> None:
    """Claude Code's Stop hook, as installed (graph/engine/hooks.py then captures in the bridge)."""
    payload = {"session_id": talk.session, "transcript_path": str(talk.path), "cwd": str(workspace)}
    _hook(workspace, "Stop", payload, env)


def _captured(client: BridgeClient, session: str, version: int) -> dict[str, Any]:
    """The session's capture once its `version` is stored (the hook hands it to the owner and returns)."""
    deadline = time.monotonic() + 60
    while True:
        memory = client.result("getMemory", {"topicId": topic_id_for("claude-code", session)})
        if memory["success"] and memory["latest"]["version"] >= version:
            return dict(memory["latest"])
        assert time.monotonic() < deadline, memory
        time.sleep(0.3)


def _user_memories(client: BridgeClient) -> list[dict[str, Any]]:
    listed = client.result("listMemories", {"scope": "user"})
    assert listed["success"], listed
    return [m for m in listed["memories"] if m["scope"] == "user"]


def _retrieved(client: BridgeClient, query: str) -> list[dict[str, Any]]:
    found = client.result("retrieveForAgent", {"query": query})
    return [e for e in found.get("entries", []) if e["scope"] == "user"]


def test_preferences_go_to_the_user_store_only_when_turned_on(
    spawn: Callable[..., BridgeClient], tmp_path: Path
) -> None:
    for on in (True, False):
        workspace = tmp_path / f"ws-{on}"
        workspace.mkdir()
        (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
        env = {**os.environ, "FLOWBABY_USER_STORE": str(tmp_path / f"user-{on}"), "FLOWBABY_CAPTURE_DEBOUNCE_SEC": "0"}
        env["FLOWBABY_CAPTURE_USER_PREFERENCES"] = "1" if on else "0"
        client = spawn(workspace, "--rate-limit-per-minute", "0", env=env)
        assert client.result("health")["success"]  # the bridge owns the workspace before the hook runs
        talk = Transcript(tmp_path / f"claude-{on}", workspace, session=f"prefs-{on}")
        talk.add("user", f"{PREFERENCE} {DECISION}")
        talk.add("assistant", "I always use uv too. Setting the lifecycle rule now.")
        talk.add("user", f"{STYLE} Thanks.")
        _stop(workspace, talk, env)
        project = _captured(client, talk.session, 1)
        assert DECISION in project["decisions"], project
        if not on:
            assert not (tmp_path / "user-False").exists(), "the user store is not even made"
            continue
        assert not {PREFERENCE, STYLE} & set(project["decisions"]), "a project copy would override them"
        shown = [client.result("getMemory", {"topicId": m["topicId"], "scope": "user"}) for m in _user_memories(client)]
        held = {d for m in shown for d in m["latest"]["decisions"]}
        assert held == {PREFERENCE, STYLE}, held  # the agent's "I always use uv too" is not the person's
        # Read in the project, not overridden there (the session's capture holds no copy of it).
        deadline = time.monotonic() + 60
        while not (mine := _retrieved(client, "Which Python package manager do I use, uv or pip?")):
            assert time.monotonic() < deadline, "the preference is never retrieved"
            time.sleep(0.5)
        assert PREFERENCE in json.dumps(mine[0]) and not mine[0].get("overriddenBy"), mine
        # Said again later in the session: reconcile in the user store keeps one memory of it.
        talk.add("user", f"Remember: {PREFERENCE} Let's add a lifecycle test for the invoices bucket.")
        _stop(workspace, talk, env)
        _captured(client, talk.session, 2)
        assert len(_user_memories(client)) == 2, _user_memories(client)
