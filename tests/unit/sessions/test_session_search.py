"""Session search's engine (graph.sessions.ranking, graph.sessions.lexicon): a lexical lane that
finds identifiers the vector lane cannot, one result per turn with its best chunk, `score` and
`lanes`, recency as a tie-break, the lexical lane following updates and restarts, optional
abstention with weak candidates, and session turns as retrieveForAgent entries."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.core.contract import NO_FRESHNESS, ContractFailure, FlowbabyContextRequest
from graph.core.memories import Memory
from graph.search.catalog import Catalog
from graph.search.markdown import render_markdown
from graph.search.retrieval import Retriever, Scored
from graph.sessions.agent_api import SessionMemory
from graph.sessions.entries import merge, session_entry
from graph.sessions.index import SessionIndex
from graph.sessions.ranking import TurnHit
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, HashEncoder, chunk_vector, memory
from tests.support.session_fixtures import Transcript
from tests.unit.sessions.test_sessions import grown_after_import, make_index, settings


def open_memory(home: dict[str, Any], encoder: HashEncoder | None = None) -> SessionMemory:
    return SessionMemory(
        home["ws"], home["data"] / "sessions", encoder or HashEncoder(), settings(home), backend=home["backend"]
    )


class ProseEncoder(HashEncoder):
    """Sees only plain words: identifiers (digits, underscores, dots, slashes) are invisible to it,
    as they nearly are to MiniLM's word pieces."""

    def encode(self, texts: list[str]) -> list[list[float]]:
        plain = [" ".join(w for w in t.split() if re.fullmatch(r"[A-Za-z,.?!']+", w)) or "empty" for t in texts]
        return super().encode(plain)


def make(home: dict[str, Any], encoder: HashEncoder | None = None) -> SessionIndex:
    """test_sessions' index, seen through ProseEncoder unless told otherwise."""
    return make_index(home, encoder or ProseEncoder())


def coding_session(home: dict[str, Any]) -> Transcript:
    t = Transcript(home["claude"], home["ws"])
    t.user("The nightly job failed again, can you check the log?")
    t.assistant("msg_a", {"type": "text", "text": "The job failed because the ledger lock was busy: E_LEDGER_7712."})
    t.user("Why did the nightly job fail last week?")
    t.assistant("msg_b", {"type": "text", "text": "Last week the nightly job failed on a full disk."})
    return t


def test_an_identifier_is_found_by_the_lexical_lane_with_score_and_lanes(home: dict[str, Any]) -> None:
    t = coding_session(home)
    index = make(home)
    info = index.find(t.session_id)[0]
    index.import_session(info)
    found = index.search([info.key], "E_LEDGER_7712", 3).results
    assert found[0]["turn_source_id"] == "msg_a"
    assert found[0]["lanes"] == ["lexical", "vector"] and 0 < found[0]["score"] <= 1
    assert found[0]["distance"] is not None  # the vector distance of the shown chunk, as before
    vector_only = index.search([info.key], "E_LEDGER_7712", 3, lanes=frozenset({"vector"})).results
    assert vector_only[0]["turn_source_id"] != "msg_a"  # the prose encoder cannot see the code
    index.close()


def test_one_result_per_turn_its_best_chunk_shown(home: dict[str, Any]) -> None:
    t = Transcript(home["claude"], home["ws"])
    t.user("Summarise the cache work.")
    long_answer = [f"Paragraph {n} about unrelated refactoring of the parser module." for n in range(12)]
    long_answer[7] = "The Redis session cache TTL is fifteen minutes after the login regression."
    t.assistant("msg_long", {"type": "text", "text": "\n".join(line + " " + "x" * 40 for line in long_answer)})
    t.user("What TTL did we pick for the Redis session cache?")
    index = make(home, HashEncoder())
    info = index.find(t.session_id)[0]
    index.import_session(info)
    assert index.status(info)["chunks"] > 3  # the long answer spans several chunks
    found = index.search([info.key], "Redis session cache TTL fifteen minutes", 10).results
    turns = [r["turn_source_id"] for r in found]
    assert len(turns) == len(set(turns))
    best = next(r for r in found if r["turn_source_id"] == "msg_long")
    assert "fifteen minutes" in best["chunk_text"] and best["chunk_index"] > 0
    index.close()


def test_recency_orders_equal_turns_newest_first(home: dict[str, Any]) -> None:
    t = Transcript(home["claude"], home["ws"])
    t.user("Deploy the billing service to staging.")
    t.user("Something else entirely about the docs.")
    t.user("Deploy the billing service to staging.")
    index = make(home, HashEncoder())
    info = index.find(t.session_id)[0]
    index.import_session(info)
    found = index.search([info.key], "Deploy the billing service to staging.", 2).results
    assert found[0]["score"] >= found[1]["score"] and found[0]["created_at"] > found[1]["created_at"]
    index.close()


def test_the_lexical_lane_follows_updates_and_restarts(home: dict[str, Any]) -> None:
    index = make(home)
    t, info = grown_after_import(
        home, index, "First block mentions ZEBRA_TOKEN_41.", "Second block mentions OKAPI_TOKEN_77."
    )
    index.update_session(info)
    hits = index.search([info.key], "OKAPI_TOKEN_77", 5).results
    assert hits[0]["turn_source_id"] == "msg_1" and "lexical" in hits[0]["lanes"]
    assert "OKAPI_TOKEN_77" in hits[0]["chunk_text"]
    index.close()
    t.user("Then we saw WOMBAT_ERR_9.")  # written while no index was open
    reopened = make(home)
    reopened.update_session(reopened.find(t.session_id)[0])
    hits = reopened.search([info.key], "WOMBAT_ERR_9", 1).results
    assert "lexical" in hits[0]["lanes"] and "WOMBAT_ERR_9" in hits[0]["chunk_text"]
    reopened.close()


def test_abstention_is_optional_and_lists_two_weak_candidates(home: dict[str, Any]) -> None:
    t = coding_session(home)

    async def run() -> None:
        memory_api = open_memory(home)
        await memory_api.call("import", {"session_id": t.session_id})
        query = {"q": "kubernetes ingress annotations for gRPC"}
        plain = await memory_api.call("search_all", query)
        assert plain["count"] > 0 and "abstained" not in plain  # Vapor's behaviour by default
        abstained = await memory_api.call("search_all", {**query, "abstain": True})
        assert abstained["results"] == [] and "no session turn is close" in abstained["abstained"]
        weak = abstained["weak_candidates"]
        assert 0 < len(weak) <= 2 and all(w["weak"] for w in weak)
        answered = await memory_api.call("search_all", {"q": "nightly job failed ledger lock", "abstain": True})
        assert answered["count"] > 0 and "abstained" not in answered
        with pytest.raises(ContractFailure) as failure:
            await memory_api.call("search_all", {**query, "abstain": "yes"})
        assert failure.value.code.value == "INVALID_REQUEST"
        await memory_api.close()

    asyncio.run(run())


def test_session_turns_become_entries_ranked_with_memories(home: dict[str, Any]) -> None:
    t = coding_session(home)

    async def run() -> None:
        memory_api = open_memory(home)
        await memory_api.call("import", {"session_id": t.session_id})
        turns, weak, reason = await memory_api.turns("E_LEDGER_7712 ledger lock", 3, False, 2000)
        assert reason is None and weak == []
        top = turns[0]
        assert top.source == "session" and top.sessionTurn is not None
        assert (top.sessionTurn.sessionId, top.sessionTurn.turnId) == (t.session_id, "msg_a")
        assert top.topicId == f"session:claude-code:{t.session_id}:msg_a" and "session" in top.lanes
        captured = memory(
            "m", topic="Ledger lock", context="The job failed because the ledger lock was busy: E_LEDGER_7712."
        )
        retriever = Retriever(Catalog([captured]), FakeEncoder("x"), FakeGraph(), lambda: FakeChunkIndex({}))
        entry = retriever._entry(_scored(captured, 0.01), captured.context, 20, NO_FRESHNESS, False)
        same_session = entry.model_copy(update={"sessionId": t.session_id})
        merged, _ = merge([same_session], turns, 5, 10_000)
        assert "msg_a" not in [e.sessionTurn.turnId for e in merged if e.sessionTurn]  # captured: shown once
        merged, used = merge([entry], turns, 3, 10_000)  # one list by score: the weak memory (0.01) is not first
        assert merged[0].sessionTurn is not None and merged[0].sessionTurn.turnId == "msg_a"
        assert "memory" in [e.source for e in merged] and [e.score for e in merged] == sorted(
            (e.score for e in merged), reverse=True
        )
        assert used == sum(e.tokens for e in merged)
        markdown = render_markdown(merged)
        assert f"session `{t.session_id}` (claude-code), turn `msg_a`" in markdown
        await memory_api.close()

    asyncio.run(run())


def _scored(item_memory: Memory, score: float) -> Scored:
    item = Scored(item_memory)
    item.score = score
    return item


def test_a_session_entry_scores_on_the_memories_scale() -> None:
    result = {
        "embedding_id": "turn:s:m:0", "distance": 0.2, "chunk_text": "text", "turn_source_id": "m",
        "session_id": "s", "chunk_index": 0, "source": "opencode", "created_at": "2026-01-01T00:00:00.000Z",
        "score": 1.0, "lanes": ["lexical", "vector"],
    }  # fmt: skip
    hit = TurnHit("opencode:s", "m", "turn:s:m:0", 0, 0, "text", 0.8, vector=0.8, lexical=1.0)
    entry = session_entry(result, hit, "Title", 100)
    assert entry.score == round(1.8 / 3.1, 6)  # what a memory with the same two lane scores gets
    assert entry.sessionTurn is not None and entry.sessionTurn.distance == 0.2


def test_an_abstained_retrieval_lists_weak_candidates_and_the_markdown_says_nothing_was_found() -> None:
    from graph.search import retrieval as r

    weak = r.ABSTAIN_VECTOR - 0.05
    index = FakeChunkIndex({m: [chunk_vector(weak - 0.01 * n)] for n, m in enumerate("abc")})
    ret = Retriever(Catalog([memory("a"), memory("b"), memory("c")]), FakeEncoder("q"), FakeGraph(), lambda: index)
    entries, used, reason, candidates = ret.retrieve(FlowbabyContextRequest(query="q"))
    assert entries == [] and reason is not None
    assert [c.topicId for c in candidates] == ["a", "b"] and all(c.weak for c in candidates)
    text = render_markdown(entries, reason)
    assert "Nothing relevant was found" in text and "## 1." not in text


def test_retrieve_for_agent_with_include_sessions(
    home: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the service: without includeSessions a query no memory answers abstains, with two weak
    candidates and a markdown that says nothing was found; with it, the session turn answers."""
    from graph.backends.embedded.vectors import VectorIndex
    from graph.core.memories import new_operation_id
    from graph.core.settings import LLMSettings, Settings
    from graph.core.workspace import WorkspaceLock, resolve_workspace
    from graph.engine.service import FlowbabyService
    from tests.unit.engine.test_hardening import HashEmbedder

    t = coding_session(home)
    paths = resolve_workspace(home["ws"])
    service = FlowbabyService(
        paths, Settings(llm=LLMSettings(), embedding_model=str(tmp_path)), WorkspaceLock(paths), None
    )
    service.embedder = HashEmbedder()  # type: ignore[assignment]
    service.session_memory = open_memory(home)
    query = "E_LEDGER_7712 ledger lock"

    async def body() -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
        await service.session_memory.call("import", {"session_id": t.session_id})
        notes = ("Notes about the ledger export format", "The ledger backup schedule", "Office plants")
        stored = [memory("", topic_id=f"m{n}", context=text) for n, text in enumerate(notes)]  # a word, no more
        for item in stored:
            service.store.stage(item, new_operation_id())
        index = VectorIndex(paths.vectors, service.embedder)
        index.add_memories(stored)
        service._vectors = index
        service._warm_task = asyncio.create_task(asyncio.sleep(0))
        await service._warm_task
        service._retriever = Retriever(Catalog(stored), service.embedder, FakeGraph(), lambda: index)
        plain = await call_json(service, "retrieve", {"query": query})
        markdown = await call_json(service, "retrieve", {"query": query}, markdown=True)
        mixed = await call_json(service, "retrieve", {"query": query, "includeSessions": True, "maxResults": 2})

        async def stuck(*args: object) -> object:  # an index still loading
            await asyncio.sleep(5)
            raise AssertionError("not awaited to the end")

        monkeypatch.setattr(service.settings, "retrieval_timeout_sec", 0.5)
        monkeypatch.setattr(service.session_memory, "turns", stuck)
        late = await call_json(service, "retrieve", {"query": query, "includeSessions": True})
        assert late["abstained"] is True and "Sessions were not searched" in str(late["sessionsNotSearched"])
        await service.session_memory.close()
        return plain, markdown, mixed

    plain, markdown, mixed = asyncio.run(body())
    service.store.close()
    assert plain["abstained"] is True and plain["entries"] == []
    weak = plain["weakCandidates"]
    assert isinstance(weak, list) and 0 < len(weak) <= 2 and all(w["weak"] for w in weak)
    assert "Nothing relevant was found" in str(markdown["markdown"]) and "weakCandidates" in markdown
    assert mixed["abstained"] is False and mixed["weakCandidates"] == []
    entries = mixed["entries"]
    assert isinstance(entries, list) and entries[0]["source"] == "session"
    assert entries[0]["sessionTurn"]["turnId"] == "msg_a" and entries[0]["weak"] is False


def test_a_session_another_server_imported_is_found_by_words(home: dict[str, Any], backend: str) -> None:
    """Two indexes on one backend (two team servers on one namespace, or a restart): the one that
    did not import the session re-reads it at its next search, by its import mark."""
    first = make(home)
    t1 = coding_session(home)
    first.import_session(first.find(t1.session_id)[0])
    assert first.search(first.keys_under(None), "E_LEDGER_7712", 1).results[0]["turn_source_id"] == "msg_a"
    t2 = Transcript(home["claude"], home["ws"])
    t2.user("Staging answers HTTP 503 with code QX_BUDGET_88 since the deploy.")
    second = make(home)
    second.import_session(second.find(t2.session_id)[0])
    found = first.search(first.keys_under(None), "QX_BUDGET_88", 2).results
    assert found[0]["session_id"] == t2.session_id and "lexical" in found[0]["lanes"]
    if backend == "postgres":  # vectors are read from the database: the chunk's distance is known
        assert found[0]["distance"] is not None
    first.close()
    second.close()


class ListedChunks:
    """The bookkeeping's surface the lexicon reads, over a dict (key -> chunk id -> text)."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, str]] = {}
        self.marks: dict[str, str] = {}

    def import_marks(self) -> dict[str, str]:
        return dict(self.marks)

    def chunk_ids(self, key: str) -> list[str]:
        return list(self.sessions.get(key, {}))

    def chunks_by_id(self, ids: list[str]) -> dict[str, dict[str, object]]:
        texts = {eid: text for chunks in self.sessions.values() for eid, text in chunks.items()}
        return {eid: {"text": texts[eid]} for eid in ids if eid in texts}


def test_replaced_chunks_are_skipped_and_the_index_rebuilt_when_they_outnumber_live_ones() -> None:
    from graph.sessions.lexicon import ChunkLexicon

    store, lexicon = ListedChunks(), ChunkLexicon()
    sizes = []
    for n in range(1200):  # two chunks rewritten 1,200 times (a streaming message)
        store.sessions["s"] = {"c0": f"draft number {n} of the answer", "c1": "ALPACA_FLAG stays"}
        store.marks["s"] = str(n)
        lexicon.sync(store, ["s"])
        sizes.append(len(lexicon._index))
        assert set(lexicon.search(["s"], "draft answer", everything=True)) == {"c0"}  # old drafts skipped
    assert max(sizes) <= 1004 and sizes[-1] < max(sizes)  # rebuilt once dead documents passed 1,000
    assert set(lexicon.search(["s"], "ALPACA_FLAG", everything=True)) == {"c1"}


def _row(message_id: str, created_ms: int) -> dict[str, object]:
    return {"session_key": "s", "message_id": message_id, "chunk_index": 0, "created_ms": created_ms, "text": ""}


def test_a_turn_whose_neighbour_also_matches_outranks_an_equal_lone_turn() -> None:
    from graph.sessions.ranking import fuse

    # "lone" and "answer" match equally; "question", just before "answer", matches too
    nearest = [("s", "c-lone", 0.6), ("s", "c-answer", 0.6), ("s", "c-question", 0.5)]
    rows = {"c-lone": _row("lone", 9_000), "c-answer": _row("answer", 2_000), "c-question": _row("question", 1_000)}
    order = ["question", "answer", "gap", "lone"]

    def beside(key: str, message_id: str) -> tuple[str, ...]:
        n = order.index(message_id)
        return tuple(order[i] for i in (n - 1, n + 1) if 0 <= i < len(order))

    alone = fuse(nearest, {}, {}, rows)
    assert [h.message_id for h in alone][:2] == ["lone", "answer"]  # a tie: the newer first
    together = fuse(nearest, {}, {}, rows, neighbours=beside)
    assert [h.message_id for h in together] == ["answer", "question", "lone"]
    assert all(0 < h.score <= 1 for h in together)
    assert together[0].vector == 0.6 and together[0].similarity == 0.6  # the lanes' own evidence is unchanged


def test_the_turn_order_follows_imports(home: dict[str, Any]) -> None:
    t = Transcript(home["claude"], home["ws"])
    first = t.user("The nightly job failed again, can you check the log?")["uuid"]
    t.assistant("msg_a", {"type": "text", "text": "The ledger lock was busy: E_LEDGER_7712."})
    index = make(home)
    info = index.find(t.session_id)[0]
    index.import_session(info)
    around = index.order.around({info.key})
    assert around(info.key, "msg_a") == (first,) and around(info.key, first) == ("msg_a",)
    assert around(info.key, "nope") == ()
    later = t.user("And this week?")["uuid"]
    index.update_session(index.find(t.session_id)[0])
    assert index.order.around({info.key})(info.key, "msg_a") == (first, later)  # read again: a new import mark
    assert around(info.key, "msg_a") == (first,)  # a search's own view does not change under it
    index.close()


def test_a_session_that_left_the_bookkeeping_leaves_the_turn_order() -> None:
    from graph.sessions.turn_order import TurnOrder

    class Turns:
        marks = {"s": "1"}

        def import_marks(self) -> dict[str, str]:
            return dict(self.marks)

        def turns(self, key: str) -> list[tuple[str, int, str, int]]:
            return [("a", 0, "user", 0), ("b", 1, "assistant", 1)] if key in self.marks else []

    store = Turns()
    order = TurnOrder(store)
    assert order.around({"s"})("s", "a") == ("b",)
    store.marks = {}
    assert order.around(set())("s", "a") == () and order._held == {}
