"""graph.search.user_scope: the two stores' ranked lists fused fairly, an overridden user memory last,
and the briefing's preferences within their budget (docs/contract/21-user-scope.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.core.contract import ErrorCode, FlowbabyError, FlowbabyIngestRequest
from graph.engine.service import FlowbabyService
from graph.search.token_budget import count_tokens
from graph.search.user_scope import PREFERENCES_TITLE, budget, fuse, preferences_section
from tests.unit.engine.test_export_import import make_service  # noqa: F401 (fixture)
from tests.unit.engine.test_hardening import run


def entry(topic_id: str, scope: str, tokens: int = 10, **more: Any) -> dict[str, Any]:
    return {"topicId": topic_id, "scope": scope, "tokens": tokens, **more}


def test_fuse_alternates_the_stores_best_first_and_keeps_the_limits() -> None:
    project = [entry(f"p{i}", "project") for i in range(3)]
    user = [entry(f"u{i}", "user") for i in range(3)]
    assert [e["topicId"] for e in fuse(project, user, 4, 1000)] == ["p0", "u0", "p1", "u1"]
    assert [e["topicId"] for e in fuse(project, user, 10, 35)] == ["p0", "u0", "p1"]
    assert [e["topicId"] for e in fuse([], user, 2, 1000)] == ["u0", "u1"]


def test_an_overridden_user_entry_goes_after_every_other() -> None:
    project = [entry("p0", "project"), entry("p1", "project")]
    user = [entry("u0", "user", overriddenBy="p0"), entry("u1", "user")]
    assert [e["topicId"] for e in fuse(project, user, 4, 1000)] == ["p0", "p1", "u1", "u0"]


def test_preferences_name_the_project_memory_that_wins_and_fit_their_budget() -> None:
    preferences = [
        {"topicId": "uv", "topic": "Python packages", "decisions": ["Use uv, never pip"]},
        {"topicId": "commits", "topic": "Commit messages", "decisions": ["Write them in the imperative"]},
    ]
    lines, items, used = preferences_section(preferences, {"uv": "pip-here"}, 1000)
    assert lines[0] == PREFERENCES_TITLE
    assert "(overridden in this project by topicId pip-here)" in lines[1] and "user scope" in lines[1]
    assert items == [
        {"section": "preferences", "topicId": "uv", "scope": "user", "overriddenBy": "pip-here"},
        {"section": "preferences", "topicId": "commits", "scope": "user"},
    ]
    assert used >= sum(count_tokens(line) for line in lines)
    small = budget(200)
    lines, items, used = preferences_section(preferences * 20, {}, small)
    assert used <= small and 0 < len(items) < 40
    assert preferences_section(preferences, {}, 5) == ([], [], 0)
    assert budget(800) == 200 and budget(100) == 50


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_team_servers_engine_keeps_no_user_scope(make_service: Callable[[str], FlowbabyService]) -> None:  # noqa: F811
    """On the team backend (many servers, one namespace) a request naming the user scope is refused, and
    reads never reach a user store: user memories stay on the user's machine (21.6)."""
    service = make_service("team")
    assert service.backend.shared and not service._has_user_scope()

    async def refused() -> None:
        for call in (
            lambda: call_json(service, "store_memory", {"topic": "Packages", "context": "I use uv.", "scope": "user"}),
            lambda: call_json(service, "list_memories", {"scope": "user"}),
            lambda: call_json(service, "get_memory", {"topicId": "packages", "scope": "user"}),
        ):
            with pytest.raises(FlowbabyError) as caught:
                await call()
            assert caught.value.code is ErrorCode.INVALID_PAYLOAD and caught.value.details["fields"] == ["scope"]
        assert await service._user_service(create=True) is None

    run(refused)


@pytest.mark.parametrize("backend", ["embedded"])
def test_the_briefings_preferences_are_read_in_one_call(make_service: Callable[[str], FlowbabyService]) -> None:  # noqa: F811
    """The user store is often another process's (each call a round trip on its socket): the briefing reads
    the preferences' topics, decisions and context by one listMemories, not a getMemory per preference."""
    user, project = make_service("user"), make_service("project")
    calls: list[str] = []

    class Counted:
        """The user store's service as the briefing reaches it, each call counted."""

        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(user, name)

    async def briefed() -> list[dict[str, Any]]:
        for i in range(4):
            fields = {"topic": f"Habit {i}", "context": f"Habit {i} in full.", "decisions": [f"Use tool {i}"]}
            await user.store_memory(
                FlowbabyIngestRequest.model_validate({**fields, "metadata": {"topicId": f"habit-{i}"}}), writer="person"
            )
        old = {"topic": "Old", "context": "Gone.", "metadata": {"topicId": "old", "status": "Superseded"}}
        await user.store_memory(FlowbabyIngestRequest.model_validate(old), writer="person")
        return await project._preferences(Counted())  # type: ignore[arg-type]

    found = run(briefed)
    assert calls == ["list_memories"], calls
    assert {p["topicId"]: (p["decisions"], p["context"], p["topic"]) for p in found} == {
        f"habit-{i}": ([f"Use tool {i}"], f"Habit {i} in full.", f"Habit {i}") for i in range(4)
    }
