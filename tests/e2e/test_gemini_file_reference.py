"""Real Gemini CLI 0.61.0 with an `@README.md` reference (issue 58 item 7): Gemini inlines the file into the
user turn's recorded `content` (`--- Content from referenced files ---`) and keeps what the person typed in
`displayContent`. The README came with the repository: its "We decided ..." sentence and its "I always ..."
sentence are the file's words, not the person's, so the capture at the session's end holds neither as a
decision and, with preference capture on, the user store gets only what the person typed.

Driven as tests/e2e/test_gemini_cli.py drives it: offline against the loopback Gemini-API fake, set up by
`flowbaby install --client gemini`, a running `flowbaby serve` on the project (its environment turns
FLOWBABY_CAPTURE_USER_PREFERENCES on, as the person's shell would)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from bridge.client import BridgeClient
from tests.e2e.test_gemini_cli import Gemini
from tests.integration.test_http_api import Server
from tests.support.agent_cli import WEBHOOKS, captured, until

pytestmark = pytest.mark.slow

README_DECISION = "We decided to publish every release tag to the mirror at git.mirror-example.net first."
README_PREFERENCE = "I always push straight to the main branch without review."
TYPED_PREFERENCE = "I always write docstrings in British English."


@pytest.fixture(scope="module")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gemini, Server, dict[str, str]]]:
    """The served owner's environment (Server copies ours) turns preference capture on, with a user store
    of this module's own: the preferences it captures must not reach the suite's shared user store."""
    names = ("FLOWBABY_CAPTURE_USER_PREFERENCES", "FLOWBABY_USER_STORE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["FLOWBABY_CAPTURE_USER_PREFERENCES"] = "1"
    os.environ["FLOWBABY_USER_STORE"] = str(tmp_path_factory.mktemp("gemini-user") / "user")
    try:
        with Gemini.serving(tmp_path_factory.mktemp("gemini-ref"), "--client", "gemini") as running:
            yield running
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _user_decisions(client: Gemini) -> list[str]:
    """Every decision of the person's user store, as the project's bridge lists it."""
    with BridgeClient(client.project, env=client.env, extra_args=["--rate-limit-per-minute", "0"]) as bridge:
        listed = bridge.result("listMemories", {"scope": "user"})
        held = [m for m in listed.get("memories", []) if m.get("scope") == "user"]
        shown = [bridge.result("getMemory", {"topicId": m["topicId"], "scope": "user"}) for m in held]
    return [d for m in shown if m.get("success") for d in m["latest"]["decisions"]]


def test_a_referenced_files_text_is_not_the_persons_words(gemini: tuple[Gemini, Server, dict[str, str]]) -> None:
    client, _, _ = gemini
    readme = f"# Release tooling\n\n{README_DECISION}\n\n{README_PREFERENCE}\n"
    (client.project / "README.md").write_text(readme)
    client.ask(f"Summarize @README.md for me. {WEBHOOKS} {TYPED_PREFERENCE}")
    chats = list((client.root / "home" / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    recorded = "\n".join(path.read_text() for path in chats)
    assert "--- Content from referenced files ---" in recorded and '"displayContent"' in recorded, recorded[-3000:]
    assert README_DECISION in json.dumps(client.model.sent("contents")), "the file reached the model: it was referenced"

    entry: dict[str, Any] = captured(client.project, client.env, "gemini")
    assert any("retry outgoing webhooks 6 times" in d for d in entry["decisions"]), entry
    said = json.dumps({k: entry.get(k) for k in ("topic", "decisions", "nextSteps", "openQuestions", "rationale")})
    assert "mirror-example" not in said and "straight to the main branch" not in said, entry

    preferences = until(lambda: _user_decisions(client), "the typed preference reaches the user store")
    assert TYPED_PREFERENCE in preferences, preferences
    assert not any("straight to the main branch" in p or "mirror-example" in p for p in preferences), preferences
