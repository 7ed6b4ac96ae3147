"""Retrieval after reconcile (issue 50): a question worded like a replaced decision finds its replacement
before a live look-alike, through the replaced memory's matches (graph.search.supersession.heirs, used by
graph.search.retrieval)."""

from __future__ import annotations

from graph.core.contract import FlowbabyContextRequest, MemoryStatus
from graph.search.catalog import Catalog
from graph.search.retrieval import Retriever
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector, memory

SUPERSEDED = MemoryStatus.SUPERSEDED


def _ranked(links: dict[str, list[str]] | None, include_superseded: bool = False) -> list[str]:
    """The old decision (replaced by `new` through reconcile, restated in a version of its topic) matches
    the question best; `new` hardly; the look-alike in between."""
    old = memory("old", status=SUPERSEDED)
    restated = memory("restated", topic_id="restated", status=SUPERSEDED)
    again = memory("again", topic_id="restated", version=2, status=SUPERSEDED)
    memories = [old, restated, again, memory("new"), memory("look")]
    index = FakeChunkIndex(
        {
            "old": [chunk_vector(0.9)],
            "restated": [chunk_vector(0.88)],
            "again": [chunk_vector(0.5)],
            "new": [chunk_vector(0.35)],
            "look": [chunk_vector(0.7)],
        }
    )
    retriever = Retriever(
        Catalog(memories), FakeEncoder("q"), FakeGraph(), lambda: index, None if links is None else lambda: links
    )
    request = FlowbabyContextRequest(query="q", abstain=False, includeSuperseded=include_superseded)
    return [s.memory.topic_id for s in retriever.rank(request)]


def test_a_replaced_memorys_match_counts_for_its_replacement_not_for_a_look_alike() -> None:
    assert _ranked({"old": ["new"], "again": ["new"]})[:2] == ["new", "look"]
    # an older version leads to its topic's newest, and on to what replaced that
    assert _ranked({"again": ["new"]})[:2] == ["new", "look"]


def test_without_reconcile_decisions_or_with_superseded_memories_asked_for_nothing_is_inherited() -> None:
    assert _ranked(None)[0] == "look"
    assert _ranked({})[0] == "look"
    ranked = _ranked({"old": ["new"]}, include_superseded=True)
    assert ranked.index("old") < ranked.index("look") and "new" in ranked
