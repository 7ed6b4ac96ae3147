"""Abstention: an empty result with a reason when no memory is about the query, and only then."""

from __future__ import annotations

from graph.core.contract import FlowbabyContextRequest
from graph.search import retrieval as r
from graph.search.catalog import Catalog
from graph.search.retrieval import Retriever
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector, memory

QUERY = "invoice export"


def _retriever(cosines: dict[str, list[float]], *memories) -> Retriever:  # type: ignore[no-untyped-def]
    index = FakeChunkIndex({m: [chunk_vector(c) for c in cs] for m, cs in cosines.items()})
    return Retriever(Catalog(memories), FakeEncoder(QUERY), FakeGraph(), lambda: index)


def test_weak_matches_only_abstain_with_the_reason() -> None:
    weak = r.ABSTAIN_VECTOR - 0.05  # above the match floor, below the abstention cut
    assert weak > r.MATCH_FLOOR["vector"]
    ret = _retriever({"a": [weak], "b": [weak - 0.05]}, memory("a"), memory("b"))
    entries, used, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY))
    assert entries == [] and used == 0
    assert reason is not None and "no memory is close to the query" in reason
    # The caller can ask for the weak matches anyway.
    entries, _, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY, abstain=False))
    assert [e.topicId for e in entries] == ["a", "b"] and reason is None


def test_a_close_sentence_or_a_strong_word_match_answers() -> None:
    close = _retriever({"a": [r.ABSTAIN_VECTOR + 0.01]}, memory("a"))
    assert close.retrieve(FlowbabyContextRequest(query=QUERY))[2] is None
    words = _retriever({}, memory("w", topic="invoice export", context="invoice export"))
    entries, _, reason, _weak = words.retrieve(FlowbabyContextRequest(query=QUERY))
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
    _, _, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=query))
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
    entries, _, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY), frozenset({"vector", "lexical"}))
    assert reason is None and [e.topicId for e in entries] == ["a"]


def test_no_match_standing_out_abstains_but_a_clear_best_match_answers() -> None:
    # Both above the first sign's cut, below the third's, and nearly tied: no memory is about the query.
    top = (r.ABSTAIN_VECTOR + r.ABSTAIN_AMBIGUOUS_VECTOR) / 2
    assert top > r.ABSTAIN_VECTOR
    tied = _retriever({"a": [top], "b": [top - r.ABSTAIN_MARGIN / 2]}, memory("a"), memory("b"))
    entries, _, reason, _weak = tied.retrieve(FlowbabyContextRequest(query=QUERY))
    assert entries == [] and reason is not None and "no memory stands out" in reason
    # The same best score, clearly ahead of the runner-up: a paraphrase that shares no word still answers.
    clear = _retriever({"a": [top], "b": [top - 2 * r.ABSTAIN_MARGIN]}, memory("a"), memory("b"))
    assert clear.retrieve(FlowbabyContextRequest(query=QUERY))[2] is None


def test_words_the_workspace_knows_keep_a_tied_weak_match() -> None:
    top = (r.ABSTAIN_VECTOR + r.ABSTAIN_AMBIGUOUS_VECTOR) / 2
    words = [memory("a", context="the invoice export runs nightly"), memory("b", context="invoice export to S3")]
    ret = _retriever({"a": [top], "b": [top]}, *words)
    entries, _, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=QUERY))
    assert reason is None and {e.topicId for e in entries} == {"a", "b"}


def test_known_share_counts_the_query_words_no_memory_holds() -> None:
    catalog = Catalog([memory("a", context="dental charts"), memory("b", context="billing plans")])
    lexical = catalog.lexical
    assert lexical.known_share("billing plans") == 1.0
    assert lexical.known_share("Japanese localisation") == 0.0
    half = lexical.known_share("plan Japanese")
    assert 0.0 < half < 0.5  # the unknown word weighs more than a word a memory holds
    # search's own score ignores the unknown word: the best match looks as good as without it.
    assert lexical.search("plan Japanese")["b"] == lexical.search("plan")["b"]


def test_an_acronym_no_memory_writes_is_a_named_thing_too() -> None:
    # The offline extractor types GDPR as a concept; written as an acronym, it still names one thing.
    query = "What is our policy on GDPR export requests?"
    mid = (r.ABSTAIN_VECTOR + r.ABSTAIN_UNKNOWN_VECTOR) / 2

    def ask(context: str) -> str | None:
        ret = Retriever(
            Catalog([memory("exp", context=context)]),
            FakeEncoder(query),
            FakeGraph(),
            lambda: FakeChunkIndex({"exp": [chunk_vector(mid)]}),
        )
        return ret.retrieve(FlowbabyContextRequest(query=query))[2]

    reason = ask("Clinics can request a full data export.")
    assert reason is not None and "no memory mentions GDPR" in reason
    assert ask("GDPR export requests are answered within 30 days.") is None


def test_word_coverage_is_the_best_share_of_the_query_words_one_memory_holds() -> None:
    one = memory("one", topic="Tips", context="Drivers use the app.")
    both = memory("both", topic="Tips", context="Driver tips are paid weekly.")
    query = "How are driver tips paid out?"  # content words: driver, tip, paid (out, how, are: stop words)
    assert r.word_coverage(query, [one]) == 2 / 3  # "drivers" and "tips" (stemmed), not "paid"
    assert r.word_coverage(query, [one, both]) == 1.0
    assert r.word_coverage(query, []) == 0.0
    assert r.word_coverage("how are they?", [one]) == 1.0  # no content word: nothing to miss


def test_one_shared_word_does_not_save_a_weak_match() -> None:
    # BM25 normalised over the matched words gives "drivers" alone a strong word match; the share of
    # the query's words is what counts now.
    query = "Which insurer covers the drivers' accident claims?"
    ret = Retriever(
        Catalog([memory("d", topic="Driver app", context="Drivers scan parcels with the app.")]),
        FakeEncoder(query),
        FakeGraph(),
        lambda: FakeChunkIndex({"d": [chunk_vector(r.ABSTAIN_VECTOR - 0.05)]}),
    )
    ranked = ret.rank(FlowbabyContextRequest(query=query))
    assert ranked[0].lanes["lexical"] >= 0.6  # what the old word cut accepted
    reason = ret.retrieve(FlowbabyContextRequest(query=query))[2]
    assert reason is not None and "no memory is close to the query" in reason and "of its words" in reason


def test_a_paraphrase_sharing_no_word_answers_above_the_vector_cut() -> None:
    # "server copies during busy periods" for an autoscaling memory: no shared word, a middling cosine
    # (0.45: the Dockwise set's paraphrases sit at 0.42-0.50, which the earlier cut of 0.5 withheld).
    middling = 0.45
    assert middling > r.ABSTAIN_VECTOR
    query = "How many server copies start during busy periods?"
    ret = Retriever(
        Catalog([memory("hpa", topic="Autoscaling", context="The API scales from 3 to 14 replicas above 65% CPU.")]),
        FakeEncoder(query),
        FakeGraph(),
        lambda: FakeChunkIndex({"hpa": [chunk_vector(middling)]}),
    )
    entries, _, reason, _weak = ret.retrieve(FlowbabyContextRequest(query=query))
    assert reason is None and [e.topicId for e in entries] == ["hpa"]


def test_a_memory_holding_most_query_words_keeps_a_weak_vector_match() -> None:
    query = "pickup window scheduler"
    ret = Retriever(
        Catalog([memory("w", topic="Windows", context="The scheduler computes each pickup window in UTC.")]),
        FakeEncoder(query),
        FakeGraph(),
        lambda: FakeChunkIndex({"w": [chunk_vector(r.ABSTAIN_VECTOR - 0.05)]}),
    )
    assert r.word_coverage(query, [ret.catalog.by_id[next(iter(ret.catalog.by_id))]]) >= r.ABSTAIN_COVERAGE
    assert ret.retrieve(FlowbabyContextRequest(query=query))[2] is None


def test_word_coverage_counts_the_memory_s_words_not_its_headings() -> None:
    # summary_text writes "Next steps:" above the items; only what the memory says counts.
    planned = memory("p", topic="Release", context="Ship it.", next_steps=["deploy on Monday"])
    assert r.word_coverage("next steps", [planned]) == 0.0
    assert r.word_coverage("deploy Monday", [planned]) == 1.0
