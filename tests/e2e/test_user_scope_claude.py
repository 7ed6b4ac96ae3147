"""Issue 49 from where a user starts: a preference stored with `--scope user` in project A follows the
person into project B. Real Claude Code 2.1.332 (`claude -p`, offline against the loopback Messages-API
fake), configured only by `flowbaby install` in B, with NOTHING running when each session starts: the
preference reaches the first model request; a decision of B's own on the same subject wins there and
the briefing says so; forgetting the preference (from project A, while B's service holds the user
store) removes it from the next session and from every byte of the user store (and of both projects'
folders). The graph is off here (FLOWBABY_BUILD_GRAPH=0): cognee's copy is the forget canary's to check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_forget_canary import files_holding
from tests.support.client_env import CLAUDE_CODE, flowbaby_install, isolated_env, run_client
from tests.support.commands import run_flowbaby, serve_pids
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow

CANARY = "zqxuvpref7731"
PREFERENCE = f"Install Python packages with uv, never pip ({CANARY})"
OVERRIDE = "Install Python packages with pip instead of uv: the deploy image has no uv"


def flowbaby(env: dict[str, str], cwd: Path, *args: str) -> dict[str, Any]:
    done = run_flowbaby(*args, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def first_request(model: FakeAnthropicModel, project: Path, env: dict[str, str], prompt: str) -> str:
    """The first model request of a new `claude -p` session in `project`."""
    before = len(model.requests)
    run_client(CLAUDE_CODE, ["-p", prompt], project, env)
    return json.dumps(model.requests[before])


def test_a_user_preference_follows_the_person_into_another_project(tmp_path: Path) -> None:
    a, b = tmp_path / "project-a", tmp_path / "project-b"
    a.mkdir()
    b.mkdir()
    with FakeAnthropicModel() as claude:
        env = isolated_env(tmp_path, claude_url=claude.url)
        env.pop("FLOWBABY_USER_STORE", None)  # the default place: $XDG_DATA_HOME/flowbaby/user
        env["FLOWBABY_BUILD_GRAPH"] = "0"  # nothing here reads the graph
        user_store = tmp_path / "data" / "flowbaby" / "user"
        flowbaby_install(b, env, "--client", "claude-code")

        stored = flowbaby(
            env,
            a,
            *("memories", "add", "--scope", "user", "--topic", "Python package manager"),
            *("--context", "How I install Python packages, in every project.", "--decision", PREFERENCE),
        )
        preference = stored["summary_id"]
        assert stored["scope"] == "user" and (user_store / ".flowbaby" / "memories.sqlite").is_file()
        assert (
            not (a / ".flowbaby" / "memories.sqlite").exists()
            or CANARY.encode() not in (a / ".flowbaby" / "memories.sqlite").read_bytes()
        )
        assert not serve_pids(a) and not serve_pids(b), "nothing may run when the client starts"
        assert not (user_store / ".flowbaby" / "owner.json").exists()

        first = first_request(claude, b, env, "What should I look at first today?")
        assert "Your preferences" in first and PREFERENCE in first, "the preference reaches project B's first request"

        decided = flowbaby(
            env,
            b,
            *("memories", "add", "--topic", "Python package manager"),
            *("--context", "How this project installs its Python packages.", "--decision", OVERRIDE),
        )
        assert decided["scope"] == "project"
        first = first_request(claude, b, env, "What should I look at first today?")
        assert OVERRIDE in first and PREFERENCE in first
        assert f"overridden in this project by topicId {decided['summary_id']}" in first, first[-3000:]
        assert first.index(OVERRIDE) < first.index(PREFERENCE), "B's own decision comes first"

        assert files_holding(user_store, CANARY.encode()), "the byte scan sees the preference where it is stored"
        forgot = flowbaby(env, a, "memories", "forget", preference, "--scope", "user", "--yes")
        assert forgot["scope"] == "user" and forgot["versions"] == 1 and forgot["pending"] == [], forgot
        first = first_request(claude, b, env, "What should I look at first today?")
        assert CANARY not in first and OVERRIDE in first

        run_flowbaby("stop", "--workspace", str(b), env=env, cwd=b)
        assert not serve_pids(b)
        assert files_holding(user_store, CANARY.encode()) == []
        assert files_holding(a / ".flowbaby", CANARY.encode()) == []
        assert files_holding(b / ".flowbaby", CANARY.encode()) == [], "B's logs and session index never kept it"
