"""listMemories and getMemory: the store's keyset pages over both backends (tests/unit/conftest.py),
and the service's replies (a service that was never opened, as in test_hardening)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.backends.memory_store import MemoryStoreBackend
from graph.core.contract import FlowbabyError, ListMemoriesRequest, MemoryFilter, MemoryStatus
from graph.core.memories import new_operation_id
from graph.core.memory_query import Page, decode_cursor, encode_cursor
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.support.fakes import memory
from tests.unit.engine.test_hardening import run, service  # noqa: F401 (fixtures)

_clock = itertools.count()


def stage(
    store: MemoryStoreBackend,
    topic_id: str,
    *,
    agent: str | None = None,
    status: MemoryStatus = MemoryStatus.ACTIVE,
    context: str = "",
    created: str = "2025-03-01T10:00:00.000Z",
) -> str:
    """Stage a version, each one a millisecond after the last; returns its memory id."""
    tick = next(_clock)
    version = dataclasses.replace(
        memory("", topic_id=topic_id, status=status, context=context, created=created),
        agent_name=agent,
        staged_at=f"2026-01-01T00:{tick // 60000 % 60:02d}:{tick // 1000 % 60:02d}.{tick % 1000:03d}Z",
    )
    return store.stage(version, new_operation_id()).memory_id


def pages(store: MemoryStoreBackend, query: MemoryFilter, limit: int, newest_first: bool = True) -> list[list[str]]:
    """Every page's topic ids, following the keyset."""
    out: list[list[str]] = []
    after = None
    while True:
        rows = store.list_page(query, Page(limit, newest_first, after))
        out.append([m.topic_id for m in rows[:limit]])
        if len(rows) <= limit:
            return out
        after = (rows[limit - 1].staged_at, rows[limit - 1].memory_id)


def test_pages_are_newest_first_and_newest_version_only(store: MemoryStoreBackend) -> None:
    for topic in ("a", "b", "c", "d", "e"):
        stage(store, topic)
    stage(store, "b")  # b's second version is now the newest row
    assert pages(store, MemoryFilter(), 2) == [["b", "e"], ["d", "c"], ["a"]]
    assert pages(store, MemoryFilter(), 2, newest_first=False) == [["a", "c"], ["d", "e"], ["b"]]
    every = store.list_page(MemoryFilter(allVersions=True), Page(10))
    assert [(m.topic_id, m.version) for m in every] == [("b", 2), ("e", 1), ("d", 1), ("c", 1), ("b", 1), ("a", 1)]


def test_a_memory_staged_while_paging_neither_shifts_nor_repeats_a_row(store: MemoryStoreBackend) -> None:
    for topic in ("a", "b", "c", "d"):
        stage(store, topic)
    first = store.list_page(MemoryFilter(), Page(2))
    assert [m.topic_id for m in first[:2]] == ["d", "c"]
    stage(store, "new")  # concurrent inserts land before the first page
    stage(store, "d")  # a new version of a listed topic too
    after = (first[1].staged_at, first[1].memory_id)
    rest = store.list_page(MemoryFilter(), Page(2, True, after))
    assert [m.topic_id for m in rest] == ["b", "a"]
    assert [m.topic_id for m in store.list_page(MemoryFilter(), Page(10))] == ["d", "new", "c", "b", "a"]


def test_filters_combine(store: MemoryStoreBackend) -> None:
    stage(store, "team/cache", agent="architect", context="Redis with a 15 minute TTL")
    stage(store, "team/queue", agent="reviewer", status=MemoryStatus.DECISION_RECORD, created="2025-06-01T00:00:00Z")
    stage(store, "solo/notes", agent="architect", context="100% of the 50_50 split", created="2025-07-01T00:00:00Z")

    def topics(**fields: Any) -> list[str]:
        return sorted(m.topic_id for m in store.list_page(MemoryFilter(**fields), Page(50)))

    assert topics(agentName="architect") == ["solo/notes", "team/cache"]
    assert topics(topicIdPrefix="team/") == ["team/cache", "team/queue"]
    assert topics(topicIdPrefix="TEAM/") == []  # a prefix is exact, case included
    assert topics(status=[MemoryStatus.DECISION_RECORD]) == ["team/queue"]
    assert topics(status=[MemoryStatus.ACTIVE, MemoryStatus.DECISION_RECORD]) == [
        "solo/notes",
        "team/cache",
        "team/queue",
    ]
    assert topics(text="redis WITH") == ["team/cache"]  # any case
    assert topics(text="100%") == ["solo/notes"] and topics(text="50_50") == ["solo/notes"]
    assert topics(text="0%") == ["solo/notes"] and topics(text="5%5") == []  # % and _ are literal
    assert topics(createdAfter="2025-06-01T00:00:00.000Z") == ["solo/notes", "team/queue"]
    assert topics(createdAfter="2025-06-01T00:00:00.000Z", createdBefore="2025-07-01T00:00:00.000Z") == ["team/queue"]
    assert topics(agentName="architect", topicIdPrefix="team/") == ["team/cache"]
    assert store.matching_topics(MemoryFilter(agentName="architect")) == ["solo/notes", "team/cache"]


def test_a_superseded_topic_is_found_by_its_newest_version_only(store: MemoryStoreBackend) -> None:
    stage(store, "cache", agent="old-agent")
    stage(store, "cache", agent="new-agent")
    assert [m.version for m in store.list_page(MemoryFilter(agentName="new-agent"), Page(5))] == [2]
    assert store.list_page(MemoryFilter(agentName="old-agent"), Page(5)) == []
    old = store.list_page(MemoryFilter(agentName="old-agent", allVersions=True), Page(5))
    assert [(m.version, m.status) for m in old] == [(1, MemoryStatus.SUPERSEDED)]


def test_cursor_round_trip_and_garbage() -> None:
    assert decode_cursor(encode_cursor("2026-01-01T00:00:00.000Z", "id-1")) == ("2026-01-01T00:00:00.000Z", "id-1")
    for bad in ("nope", encode_cursor("x", "y")[:-3] + "!!!", "WzEsMl0"):  # "WzEsMl0" is [1,2]
        with pytest.raises(FlowbabyError) as caught:
            decode_cursor(bad)
        assert caught.value.code.value == "INVALID_PAYLOAD" and caught.value.details == {"fields": ["cursor"]}


def test_request_validation_names_the_field() -> None:
    assert ListMemoriesRequest.model_validate({"status": "Active"}).status == [MemoryStatus.ACTIVE]
    assert ListMemoriesRequest.model_validate({"createdAfter": "2025-03-01T11:00:00+01:00"}).createdAfter == (
        "2025-03-01T10:00:00.000Z"
    )
    from graph.core.contract import validate_request

    for params, field in (
        ({"status": "Gone"}, "status"),
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"createdAfter": "yesterday"}, "createdAfter"),
        ({"order": "random"}, "order"),
    ):
        with pytest.raises(FlowbabyError) as caught:
            validate_request(ListMemoriesRequest, params)
        assert caught.value.details["fields"] == [field]


def test_service_lists_pages_and_shows_a_memory(service: FlowbabyService) -> None:  # noqa: F811
    async def body() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        for topic in ("alpha", "beta", "gamma"):
            await call_json(service, "ingest", summary(topic, topic=f"About {topic}"))
        await call_json(
            service, "ingest", summary("alpha", context="The second version of alpha's memory, much later.")
        )
        seen: list[dict[str, Any]] = []
        cursor = None
        while True:
            reply = await call_json(service, "list_memories", {"limit": 2, **({"cursor": cursor} if cursor else {})})
            seen.append(reply)
            cursor = reply["nextCursor"]
            if cursor is None:
                return (
                    seen,
                    await call_json(service, "get_memory", {"topicId": "alpha"}),
                    await call_json(service, "list_memories", {}),
                )

    listed, shown, whole = run(body)
    assert [[m["topicId"] for m in page["memories"]] for page in listed] == [["alpha", "gamma"], ["beta"]]
    assert listed[0]["memories"][0]["version"] == 2 and listed[0]["memories"][0]["preview"].startswith("The second")
    assert whole["count"] == 3 and whole["nextCursor"] is None
    assert [v["version"] for v in shown["versions"]] == [1, 2] and shown["latest"]["version"] == 2
    assert shown["supersedes"] == [
        {
            "kind": "version",
            "olderTopicId": "alpha",
            "olderMemoryId": shown["versions"][0]["memoryId"],
            "newerTopicId": "alpha",
            "newerMemoryId": shown["versions"][1]["memoryId"],
        }
    ]
    assert shown["supersededBy"] == [] and shown["entities"] == []  # no graph built here
    assert shown["provenance"]["agentName"] == "architect" and shown["provenance"]["sessionId"] == "sess-1"
    assert shown["provenance"]["graphState"] == "pending" and shown["provenance"]["operationId"].startswith("op_")

    with pytest.raises(FlowbabyError) as missing:
        run(lambda: call_json(service, "get_memory", {"topicId": "nope"}))
    assert missing.value.code.value == "NOT_FOUND"
    with pytest.raises(FlowbabyError) as bad:
        run(lambda: call_json(service, "list_memories", {"cursor": "garbage"}))
    assert bad.value.code.value == "INVALID_PAYLOAD"
