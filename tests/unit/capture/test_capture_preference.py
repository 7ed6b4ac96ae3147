"""The preference capture's rule (issue 49): the person's own way of working, from their own turns only,
told apart from project decisions and chatter on the labelled set, and off unless the person turns it on."""

from __future__ import annotations

from graph.capture.preference import is_preference, split_preferences
from graph.core.environment import Environment
from graph.sessions.model import Block, Message
from tests.bench.preference import run as measure


def test_the_labelled_set_tells_preferences_from_project_decisions_and_chatter() -> None:
    found = measure()
    for part in ("tuned", "heldOut"):
        assert found[part]["precision"] >= 0.9, found[part]["falsePositives"]
        assert found[part]["recall"] >= 0.8, found[part]["missed"]
    assert found["all"]["sentences"] >= 40


def _turn(order: int, role: str, text: str) -> Message:
    return Message(f"m{order}", role, order, order, [Block("text", text)])  # type: ignore[arg-type]


def test_only_the_persons_own_sentences_once_without_private_text_or_secrets_and_out_of_the_turns() -> None:
    key = "sk-ant-api03-" + "Q" * 40
    turns = [
        _turn(1, "user", "I always use uv, never pip. Can you add httpx?"),
        _turn(2, "assistant", "I always use uv too. I prefer short answers."),  # the agent's, not the person's
        _turn(3, "user", "<private>I prefer tabs.</private> We never deploy on Fridays."),
        _turn(4, "user", f"I always use uv, never pip.\nI prefer my API key {key} in the keyring."),
    ]
    found, kept = split_preferences(turns)
    assert found[0] == "I always use uv, never pip." and len(found) == 2
    assert key not in found[1] and "keyring" in found[1]
    assert not [p for p in found if "tabs" in p or "Fridays" in p or "short answers" in p]
    # The turns left for the project's capture: the same turns, without the person's preferences.
    texts = [b.text for m in kept for b in m.blocks]
    assert texts == ["Can you add httpx?", "", turns[2].blocks[0].text, "\n"]  # the agent's are left out too
    assert not is_preference("I always use uv, never pip. " * 30)  # a paragraph, not a stated preference


def test_the_capture_of_preferences_is_off_unless_the_person_turns_it_on() -> None:
    assert not Environment({}).capture_user_preferences
    assert not Environment({"FLOWBABY_CAPTURE_USER_PREFERENCES": "0"}).capture_user_preferences
    assert Environment({"FLOWBABY_CAPTURE_USER_PREFERENCES": "1"}).capture_user_preferences
