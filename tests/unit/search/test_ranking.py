"""Retriever.rank and retrieve with fake lanes: fusion, status rules, recency, the graph
lanes, the interleaving and token-budget packing. Chunk cosines are set exactly (see
fakes.FakeEncoder), so every expected score follows from the inputs and the module's weights."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

from graph.core.contract import FlowbabyContextRequest, MemoryStatus
from graph.core.memories import Memory
from graph.search import retrieval as r
from graph.search.catalog import Catalog
from graph.search.links import Hop
from graph.search.markdown import render_markdown
from graph.search.retrieval import Retriever, Scored, summary_text
from graph.search.token_budget import count_tokens
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector, memory

QUERY = "invoice export"
TOTAL = (
    r.LEXICAL_WEIGHT + r.VECTOR_WEIGHT * (1 + r.SECOND_CHUNK_WEIGHT) + r.GRAPH_SEED_WEIGHT + r.GRAPH_EXPANSION_WEIGHT
)
"""The fusion's total weight without hints."""
VECTOR = frozenset({"vector"})
ALL = r.LANES


def retriever(
    memories: list[Memory],
    cosines: Mapping[str, Sequence[float | tuple[float, float]]],
    graph: FakeGraph | None = None,
    hints: str = "",
) -> Retriever:
    """cosines: per memory, its chunks' cosine with the query (or (query, hints) pairs)."""
    index = FakeChunkIndex(
        {m: [chunk_vector(*c) if isinstance(c, tuple) else chunk_vector(c) for c in cs] for m, cs in cosines.items()}
    )
    return Retriever(Catalog(memories), FakeEncoder(QUERY, hints), graph or FakeGraph(), lambda: index)


def rank(ret: Retriever, lanes: frozenset[str] = ALL, **request: object) -> list[Scored]:
    return ret.rank(FlowbabyContextRequest(query=QUERY, **request), lanes)  # type: ignore[arg-type]


def ids(ranked: list[Scored]) -> list[str]:
    return [s.memory.memory_id for s in ranked]


def lexical(ret: Retriever, memory_id: str) -> float:
    return ret.catalog.lexical.search(QUERY)[memory_id]


# -- fusion ------------------------------------------------------------------------------
def test_vector_score_is_best_chunk_plus_half_the_second_and_two_facts_beat_one() -> None:
    ret = retriever([memory("two"), memory("one")], {"two": [0.7, 0.5, 0.2], "one": [0.8]})
    ranked = rank(ret, VECTOR)
    two = 0.7 + r.SECOND_CHUNK_WEIGHT * 0.5
    assert two > 0.8
    assert ids(ranked) == ["two", "one"]
    # Same creation time: both get the full recency term.
    assert ranked[0].score == pytest.approx(two / TOTAL + r.RECENCY_WEIGHT, abs=1e-5)
    assert ranked[1].score == pytest.approx(0.8 / TOTAL + r.RECENCY_WEIGHT, abs=1e-5)


def test_lexical_and_vector_scores_add_up() -> None:
    words = memory("words", context="invoice export failures at month end")
    close = memory("close")
    ret = retriever([words, close], {"words": [0.4], "close": [0.6]})
    ranked = rank(ret, frozenset({"vector", "lexical"}))
    expected = {"words": lexical(ret, "words") + 0.4, "close": 0.6}
    assert "close" not in ret.catalog.lexical.search(QUERY)
    assert ids(ranked) == sorted(expected, key=lambda m: -expected[m])
    for item in ranked:
        assert item.score == pytest.approx(expected[item.memory.memory_id] / TOTAL + r.RECENCY_WEIGHT, abs=1e-5)
    assert set(ranked[ids(ranked).index("words")].lanes) == {"vector", "lexical"}


def test_below_every_match_floor_is_no_match() -> None:
    floor = r.MATCH_FLOOR["vector"]
    ret = retriever(
        [memory("above"), memory("below")],
        {"above": [floor + 0.01], "below": [floor - 0.01, floor - 0.01]},
    )
    assert ids(rank(ret)) == ["above"]
    unrelated = retriever([memory("a"), memory("b")], {"a": [floor - 0.05], "b": [0.1]})
    assert rank(unrelated) == []
    assert retriever([], {}).rank(FlowbabyContextRequest(query=QUERY)) == []


def test_context_hints_add_their_own_weighted_lane() -> None:
    hints = "billing service"
    ret = retriever([memory("hinted"), memory("plain")], {"hinted": [(0.5, 0.8)], "plain": [(0.55, 0.0)]}, hints=hints)
    ranked = rank(ret, VECTOR, contextHints=[hints])
    total = TOTAL + r.HINT_WEIGHT
    hinted = 0.5 + r.HINT_WEIGHT * 0.8
    assert hinted > 0.55
    assert ids(ranked) == ["hinted", "plain"]
    assert ranked[0].score == pytest.approx(hinted / total + r.RECENCY_WEIGHT, abs=1e-5)
    assert ranked[0].lanes["hint"] == pytest.approx(0.8, abs=1e-6)


# -- status rules ------------------------------------------------------------------------
def test_superseded_versions_are_hidden_unless_asked_for() -> None:
    old = memory("v1", topic_id="cache", version=1)
    new = memory("v2", topic_id="cache", version=2)
    marked = memory("marked", status=MemoryStatus.SUPERSEDED)  # the agent said so itself
    ret = retriever([old, new, marked], {"v1": [0.9], "v2": [0.6], "marked": [0.8]})
    assert old.status is MemoryStatus.SUPERSEDED  # the catalog supersedes older versions of a topic
    assert ids(rank(ret, VECTOR)) == ["v2"]
    assert ids(rank(ret, VECTOR, includeSuperseded=True)) == ["v1", "marked", "v2"]


def test_a_decision_record_gets_its_boost() -> None:
    # Equal relevance and age: without the boost the id tie-break would put "a-active" first.
    decided = memory("z-decision", status=MemoryStatus.DECISION_RECORD)
    ret = retriever([decided, memory("a-active")], {"z-decision": [0.6], "a-active": [0.6]})
    ranked = rank(ret, VECTOR)
    assert ids(ranked) == ["z-decision", "a-active"]
    assert ranked[0].score - ranked[1].score == pytest.approx(r.DECISION_RECORD_BOOST, abs=1e-5)


# -- recency -----------------------------------------------------------------------------
OLD, NEW = "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"


def test_recency_orders_a_near_tie_newest_first() -> None:
    gap = 0.001
    assert gap / TOTAL < r.RECENCY_WEIGHT / 2  # a near-tie by construction
    ret = retriever([memory("old", created=OLD), memory("new", created=NEW)], {"old": [0.6 + gap], "new": [0.6]})
    assert ids(rank(ret, VECTOR, halfLifeDays=7)) == ["new", "old"]


def test_recency_never_buries_a_clearly_better_older_memory() -> None:
    gap = 0.1
    assert gap / TOTAL > r.RECENCY_WEIGHT
    ret = retriever([memory("old", created=OLD), memory("new", created=NEW)], {"old": [0.6 + gap], "new": [0.6]})
    ranked = rank(ret, VECTOR, halfLifeDays=7)
    assert ids(ranked) == ["old", "new"]
    assert ranked[1].score == pytest.approx(0.6 / TOTAL + r.RECENCY_WEIGHT, abs=1e-5)


def test_an_old_sole_answer_keeps_its_full_score() -> None:
    """Recency is relative to the newest match, not the newest memory."""
    newer = [memory(f"new{i}", created=NEW) for i in range(5)]
    ret = retriever(
        [memory("answer", created="2020-01-01T00:00:00Z"), *newer],
        {"answer": [0.7], **{m.memory_id: [0.1] for m in newer}},
    )
    ranked = rank(ret, VECTOR, halfLifeDays=7)
    assert ids(ranked) == ["answer"]
    assert ranked[0].score == pytest.approx(0.7 / TOTAL + r.RECENCY_WEIGHT, abs=1e-5)


# -- graph lanes -------------------------------------------------------------------------
def _seeded_graph(seed: str, **expansion: float) -> FakeGraph:
    return FakeGraph(entities={QUERY: {"e_ticket": 1.0}}, mentions={"e_ticket": {seed: 1.0}}, expansion=expansion)


def test_a_graph_reached_memory_keeps_its_place_ahead_of_vector_picks() -> None:
    memories = [
        memory("seed", context="invoice export alpha"),
        memory("lexi", context="invoice export bravo"),
        memory("hop"),  # shares no word with the question: reached through the graph only
        memory("vec"),
    ]
    weak = r.STRONG_LINK - 0.05  # a weak link: added to the hop's own score, gated by its cosine
    graph = _seeded_graph("seed", hop=weak)
    ret = retriever(memories, {"seed": [0.8], "lexi": [0.5], "hop": [0.45], "vec": [0.6]}, graph)
    lex = lexical(ret, "lexi")
    fused = {
        "seed": lexical(ret, "seed") + 0.8 + r.GRAPH_SEED_WEIGHT,
        "lexi": lex + 0.5,
        "hop": 0.45 + r.GRAPH_EXPANSION_WEIGHT * weak,
        "vec": 0.6,
    }
    # Fused order seed, lexi, hop, vec; the vector lane alone prefers vec (0.6) to hop (0.45),
    # so at the first vector turn (third place) a plain alternation would put vec before hop.
    assert fused["seed"] > fused["lexi"] > fused["hop"] > fused["vec"]
    ranked = rank(ret)
    assert ids(ranked) == ["seed", "lexi", "hop", "vec"]
    hop = ranked[2]
    assert "graph_expansion" in hop.lanes
    assert hop.fused == pytest.approx(fused["hop"], abs=1e-5)
    # Expansion starts from the best direct matches (within SEED_SHARE of the best) and skips the
    # question's own entities.
    [(seeds, exclude)] = graph.expand_calls
    expected = {m: fused[m] / TOTAL for m in ("seed", "lexi", "vec") if fused[m] >= r.SEED_SHARE * fused["seed"]}
    assert seeds == pytest.approx(expected, abs=1e-5) and exclude == {"e_ticket"}
    assert hop.via == Hop(weak, "seed", ("e_link",))


def test_a_graph_reached_memory_ranks_at_most_right_after_its_seed() -> None:
    # The reached memory would win on every count (bigger sum, DecisionRecord, newest).
    seed = memory("seed", created=OLD)
    hop = memory("hop", status=MemoryStatus.DECISION_RECORD, created=NEW)
    ret = retriever([seed, hop], {"seed": [0.8], "hop": [0.45]}, _seeded_graph("seed", hop=1.0))
    seed_fused = 0.8 + r.GRAPH_SEED_WEIGHT
    assert seed_fused < 0.45 + r.GRAPH_EXPANSION_WEIGHT
    ranked = rank(ret, frozenset({"vector", "graph"}), halfLifeDays=7)
    assert ids(ranked) == ["seed", "hop"]
    assert ranked[0].score > ranked[1].score
    margin = (r.DECISION_RECORD_BOOST + r.RECENCY_WEIGHT + 1e-6) * TOTAL
    assert ranked[1].fused == pytest.approx(seed_fused - margin, abs=1e-5)


def test_a_graph_reached_memory_must_still_be_close_to_the_question() -> None:
    gate = r.EXPANSION_GATE
    ret = retriever(
        [memory("seed"), memory("near"), memory("far"), memory("remote")],
        {"seed": [0.8], "near": [gate + 0.01], "far": [gate - 0.05], "remote": [0.1]},
        _seeded_graph("seed", near=0.2, far=0.45, remote=0.45),
    )
    ranked = {s.memory.memory_id: s for s in rank(ret, frozenset({"vector", "graph"}))}
    assert set(ranked) == {"seed", "near", "far"}  # far is still a vector match; remote is not
    assert "graph_expansion" in ranked["near"].lanes
    assert "graph_expansion" not in ranked["far"].lanes
    assert ranked["far"].fused == pytest.approx(gate - 0.05, abs=1e-5)


def test_a_strong_link_places_a_memory_right_after_its_seed_however_far_from_the_question() -> None:
    # The cause of "why did X happen" shares one specific name with X's memory and no word with the
    # question: a strong link brings it in, right after its seed, ahead of closer direct matches.
    ret = retriever(
        [memory("seed"), memory("cause"), memory("close"), memory("also"), memory("third")],
        {"seed": [0.8], "cause": [0.05], "close": [0.6], "also": [0.2]},
        _seeded_graph("seed", cause=r.STRONG_LINK, third=r.STRONG_LINK, also=r.STRONG_LINK),
    )
    ranked = rank(ret, frozenset({"vector", "graph"}))
    # Equal links: the memories closer to the question go first, at most two per seed.
    assert ids(ranked)[:3] == ["seed", "also", "cause"]
    placed = [s for s in ranked if s.via is not None and s.via.score >= r.STRONG_LINK]
    assert {s.memory.memory_id for s in placed} == {"also", "cause"}
    assert all(s.via.source == "seed" for s in placed)


def test_via_names_the_seed_topic_and_the_shared_name_in_entries_and_markdown() -> None:
    ret = retriever(
        [memory("seed", topic_id="nightly-export"), memory("cause", topic_id="spot-pools")],
        {"seed": [0.8], "cause": [0.05]},
        _seeded_graph("seed", cause=1.0),
    )
    entries, _, abstained, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY, maxResults=5, abstain=False))
    assert abstained is None
    by_topic = {e.topicId: e for e in entries}
    assert by_topic["nightly-export"].via is None
    assert by_topic["spot-pools"].via == "reached from `nightly-export` through `e_link`"
    assert "**Via:** reached from `nightly-export` through `e_link`" in render_markdown(entries)


def test_without_the_vector_lane_the_graph_alone_brings_the_second_hop() -> None:
    ret = retriever(
        [memory("seed", context="invoice export alpha"), memory("hop")],
        {},
        _seeded_graph("seed", hop=0.4),
    )
    ranked = rank(ret, frozenset({"lexical", "graph"}))
    assert ids(ranked) == ["seed", "hop"]
    assert ranked[1].fused == pytest.approx(r.GRAPH_EXPANSION_WEIGHT * 0.4, abs=1e-6)


# -- interleaving ------------------------------------------------------------------------
def test_after_the_first_two_places_vector_picks_alternate_with_the_fused_order() -> None:
    lexical_ids = ["l1", "l2", "l3", "l4"]
    memories = [
        memory(m, context=f"invoice export {w}") for m, w in zip(lexical_ids, ["ab", "cd", "ef", "gh"], strict=True)
    ]
    memories += [memory("v1"), memory("v2")]
    cosines = {"l1": [0.34], "l2": [0.33], "l3": [0.32], "l4": [0.31], "v1": [0.6], "v2": [0.55]}
    ret = retriever(memories, cosines)
    fused = {m: cosines[m][0] + ret.catalog.lexical.search(QUERY).get(m, 0.0) for m in cosines}
    assert sorted(fused, key=lambda m: -fused[m]) == [*lexical_ids, "v1", "v2"]
    lanes = frozenset({"vector", "lexical"})
    ranked = rank(ret, lanes)
    assert ids(ranked) == ["l1", "l2", "v1", "l3", "v2", "l4"]
    scores = [s.score for s in ranked]
    assert scores == sorted(scores, reverse=True)  # an early pick shows the score of the place it took
    # One lane alone is never interleaved.
    assert ids(rank(ret, VECTOR)) == ["v1", "v2", *lexical_ids]


# -- packing -----------------------------------------------------------------------------
def _packing(**sizes: int) -> tuple[Retriever, dict[str, int]]:
    """Memories named by their rank, with contexts of the given number of words."""
    memories = [memory(m, context=" ".join(["word"] * n)) for m, n in sizes.items()]
    cosines = {m: [0.9 - 0.1 * i] for i, m in enumerate(sizes)}
    tokens = {m.memory_id: count_tokens(summary_text(m)) for m in memories}
    return retriever(memories, cosines), tokens


def test_packing_stops_at_max_results() -> None:
    ret, tokens = _packing(a=5, b=5, c=5)
    entries, used, _, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY, maxResults=2), VECTOR)
    assert [e.memoryId for e in entries] == ["a", "b"]
    assert used == tokens["a"] + tokens["b"] == sum(e.tokens for e in entries)
    assert entries[0].lanes == ["vector"] and entries[0].score >= entries[1].score


def test_packing_skips_what_does_not_fit_for_a_smaller_lower_ranked_memory() -> None:
    ret, tokens = _packing(a=5, big=300, c=5)
    budget = tokens["a"] + tokens["c"]
    assert tokens["a"] + tokens["big"] > budget
    entries, used, _, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY, maxResults=3, maxTokens=budget), VECTOR)
    assert [e.memoryId for e in entries] == ["a", "c"]
    assert used == budget


def test_a_first_memory_larger_than_the_budget_is_truncated() -> None:
    ret, tokens = _packing(big=400, small=5)
    budget = 50
    assert tokens["big"] > budget
    entries, used, _, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY, maxResults=3, maxTokens=budget), VECTOR)
    assert [e.memoryId for e in entries] == ["big"]
    assert entries[0].summaryText.endswith("…[truncated]")
    assert entries[0].tokens == count_tokens(entries[0].summaryText) == used <= budget


@pytest.mark.parametrize(("name", "moves"), [("plat-2291", True), ("legacy_pricing_v1", True), ("sci-fi", False)])
def test_a_weaker_direct_match_moves_up_only_through_an_identifier(name: str, moves: bool) -> None:
    # Twenty memories, the name in two: a rare, strong link (above SEED_LINK) from the best seed.
    fillers = [memory(f"f{i}") for i in range(17)]
    first = memory("first", context=f"The incident names {name}.")
    second = memory("second", context=f"The rollout names {name}.")
    ret = retriever([first, memory("middle"), second, *fillers], {"first": [0.8], "middle": [0.7], "second": [0.6]})
    link, _ = ret.catalog.links.linked("first")["second"]
    assert link >= r.SEED_LINK
    order = ids(rank(ret, frozenset({"vector", "graph"})))
    assert order == (["first", "second", "middle"] if moves else ["first", "middle", "second"])


def test_identifiers_are_names_only_a_system_writes() -> None:
    from graph.search.links import is_identifier

    assert all(map(is_identifier, ["plat-2291", "legacy_pricing_v1", "billing/export.py", "pp-scans-prod"]))
    assert not any(map(is_identifier, ["sci-fi", "must-visit", "batch-workers", "lebron"]))


class _RecordingEncoder:
    """One fixed vector for every text; remembers what the vector lane asked it to embed."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [chunk_vector(1.0) for _ in texts]


@dataclass
class _LoadsOnRefresh(FakeGraph):
    """Like GraphLane: it knows nothing (no ubiquitous words) until a refresh reads the projection."""

    def refresh(self) -> None:
        super().refresh()
        self.ubiquitous = {"caroline"}


def test_the_first_query_of_a_process_strips_ubiquitous_names_like_every_later_one() -> None:
    encoder = _RecordingEncoder()
    index = FakeChunkIndex({"m": [chunk_vector(0.6)]})
    ret = Retriever(Catalog([memory("m")]), encoder, _LoadsOnRefresh(), lambda: index)
    first, second = (ret.rank(FlowbabyContextRequest(query="What did Caroline export?")) for _ in range(2))
    assert encoder.calls[0] == encoder.calls[1] == ["What did Caroline export?", "What did export?"]
    assert [(s.memory.memory_id, s.score) for s in first] == [(s.memory.memory_id, s.score) for s in second]
