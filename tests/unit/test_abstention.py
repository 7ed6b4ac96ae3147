"""Abstention: an empty result with a reason when no memory is about the query, and only then."""

from __future__ import annotations

from graph.core.contract import FlowbabyContextRequest
from graph.search import retrieval as r
from graph.search.retrieval import Catalog, Retriever
from tests.unit.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector, memory

QUERY = "invoice export"


def _retriever(cosines: dict[str, list[float]], *memories) -> Retriever:  # type: ignore[no-untyped-def]
    index = FakeChunkIndex({m: [chunk_vector(c) for c in cs] for m, cs in cosines.items()})
    return Retriever(Catalog(memories), FakeEncoder(QUERY), FakeGraph(), lambda: index)


def test_weak_matches_only_abstain_with_the_reason() -> None:
    weak = r.ABSTAIN_VECTOR - 0.05  # above the match floor, below the abstention cut
    assert weak > r.MATCH_FLOOR["vector"]
    ret = _retriever({"a": [weak], "b": [weak - 0.05]}, memory("a"), memory("b"))
    entries, used, reason = ret.retrieve(FlowbabyContextRequest(query=QUERY))
    assert entries == [] and used == 0
    assert reason is not None and "no memory is close to the query" in reason
    # The caller can ask for the weak matches anyway.
    entries, _, reason = ret.retrieve(FlowbabyContextRequest(query=QUERY, abstain=False))
    assert [e.topicId for e in entries] == ["a", "b"] and reason is None


def test_a_close_sentence_or_a_strong_word_match_answers() -> None:
    close = _retriever({"a": [r.ABSTAIN_VECTOR + 0.01]}, memory("a"))
    assert close.retrieve(FlowbabyContextRequest(query=QUERY))[2] is None
    words = _retriever({}, memory("w", topic="invoice export", context="invoice export"))
    entries, _, reason = words.retrieve(FlowbabyContextRequest(query=QUERY))
    assert reason is None and [e.topicId for e in entries] == ["w"]


def test_a_named_thing_no_memory_mentions_abstains_unless_a_memory_is_very_close() -> None:
    query = "Which GraphQL gateway did we pick?"
    mid = (r.ABSTAIN_VECTOR + r.ABSTAIN_UNKNOWN_VECTOR) / 2
    ret = Retriever(
        Catalog([memory("gw", context="The API gateway is Envoy.")]),
        FakeEncoder(query),
        FakeGraph(),
        lambda: FakeChunkIndex({"gw": [chunk_vector(mid)]}),
    )
    _, _, reason = ret.retrieve(FlowbabyContextRequest(query=query))
    assert reason is not None and "GraphQL" in reason
    very_close = Retriever(
        Catalog([memory("gw", context="The API gateway is Envoy.")]),
        FakeEncoder(query),
        FakeGraph(),
        lambda: FakeChunkIndex({"gw": [chunk_vector(r.ABSTAIN_UNKNOWN_VECTOR + 0.01)]}),
    )
    assert very_close.retrieve(FlowbabyContextRequest(query=query))[2] is None


def test_ablations_never_abstain() -> None:
    ret = _retriever({"a": [r.ABSTAIN_VECTOR - 0.05]}, memory("a"))
    entries, _, reason = ret.retrieve(FlowbabyContextRequest(query=QUERY), frozenset({"vector", "lexical"}))
    assert reason is None and [e.topicId for e in entries] == ["a"]
