"""The lexical lane's tokeniser and BM25 index: in-process (pure code, nothing to stand in for), and
the team backend's Postgres full-text (a real server), which must score as the in-memory index does."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from graph.backends.team import lexical as team_lexical
from graph.backends.team.lexical import PgLexicalIndex
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.schema import FOLD_EVERY
from graph.core.lexical import LexicalIndex
from graph.core.memories import new_operation_id
from graph.core.text import light_stem, tokenize
from tests.support.fakes import memory
from tests.support.postgres import PostgresServer


class Memories:
    """Memories staged by label into a backend's lexical lane; answers keyed by label."""

    def __init__(self, server: PostgresServer | None) -> None:
        self.labels: dict[str, str] = {}
        self.store = self.index = None
        if server is None:
            self.memory_index = LexicalIndex()
        else:
            namespace = f"t{uuid.uuid4().hex[:12]}"
            self.store = PostgresMemoryStore(server.url(), namespace, owner=False)
            self.index = PgLexicalIndex(server.url(), namespace)

    def add(self, label: str, text: str, decisions: list[str] | None = None) -> None:
        staged = memory(label, topic=label, context=text, decisions=decisions)
        if self.store is not None:
            staged = self.store.stage(staged, new_operation_id())
        else:
            self.memory_index.add(staged.memory_id, " ".join(t for _, items in staged.sections() for t in items))
        self.labels[staged.memory_id] = label

    @property
    def lane(self) -> LexicalIndex | PgLexicalIndex:
        return self.index if self.index is not None else self.memory_index

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        return {self.labels[m]: score for m, score in self.lane.search(query, limit).items()}

    def close(self) -> None:
        if self.store is not None and self.index is not None:
            self.store.close()
            self.index.close()


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.postgres)])
def lane(request: pytest.FixtureRequest) -> Iterator[Memories]:
    memories = Memories(request.getfixturevalue("postgres") if request.param == "postgres" else None)
    yield memories
    memories.close()


def test_identifiers_split_into_searchable_parts() -> None:
    assert tokenize("E_LEDGER_LOCK in billing/reconcile.py (PR #482)") == [
        "e",
        "ledg",
        "lock",
        "bill",
        "reconcil",
        "py",
        "pr",
        "482",
    ]


def test_stopwords_out_and_light_stemming() -> None:
    assert tokenize("What are the caches doing?") == ["cach"]
    assert tokenize("ledgers") == tokenize("ledger")  # query and memory stem alike
    assert light_stem("queries") == "query" and light_stem("class") == "class" and light_stem("2024") == "2024"


def test_non_ascii_words_are_tokens() -> None:
    assert tokenize("Ünïcödé 日本語 naïve") == ["ünïcödé", "日本語", "naïv"]


def test_scores_are_self_normalised_and_rank_exact_matches_first(lane: Memories) -> None:
    lane.add("a", "Invoice exports failed with E_LEDGER_LOCK on the ledger")
    lane.add("b", "Ledger schema cleanup dropped unused columns")
    lane.add("c", "Redis session cache with a 15 minute TTL")
    scores = lane.search("E_LEDGER_LOCK")
    assert max(scores, key=scores.__getitem__) == "a"
    assert all(0 < value <= 1 for value in scores.values())
    assert "c" not in scores
    assert lane.search("banana") == {} and lane.search("the of") == {}


def test_code_identifiers_and_words_in_any_script_are_found(lane: Memories) -> None:
    lane.add("hyphen", "The redis-cache sidecar restarts nightly")
    lane.add("snake", "Renamed retry_backoff_ms in billing/reconcile.py")
    lane.add("camel", "InvoiceExporter got a new constructor")
    lane.add("ticket", "PAW-1234 tracks the rollout", decisions=["Ship v2.3.1 behind e2e checks"])
    lane.add("unicode", "Ünïcödé 日本語 naïve café")
    for query, label in [
        ("redis-cache", "hyphen"),
        ("redis cache", "hyphen"),
        ("retry_backoff_ms", "snake"),
        ("reconcile.py", "snake"),
        ("InvoiceExporter", "camel"),
        ("PAW-1234", "ticket"),
        ("e2e", "ticket"),
        ("日本語", "unicode"),
    ]:
        found = lane.search(query, 5)
        assert next(iter(found), None) == label, (query, found)
    assert lane.lane.knows("PAW-1234") and lane.lane.knows("InvoiceExporter")
    assert not lane.lane.knows("GDPR") and lane.lane.knows("")
    assert lane.lane.known_share("redis cache") == 1.0
    assert 0 < lane.lane.known_share("redis localisation") < 1 and lane.lane.known_share("the") == 1.0


def test_the_team_backend_scores_as_the_in_memory_index_does(postgres: PostgresServer) -> None:
    """Same BM25 arithmetic over the same words: the stemmers differ (Snowball there, a light one
    here), so scores agree closely, not exactly, and the best match is the same."""
    texts = {
        "a": "Invoice exports failed with E_LEDGER_LOCK on the ledger",
        "b": "Ledger schema cleanup dropped unused columns from the ledger tables",
        "c": "Redis session cache with a 15 minute TTL",
        "d": "The export job now batches invoices by tenant",
        "e": "Session tokens rotate every 15 minutes",
    }
    here, there = Memories(None), Memories(postgres)
    try:
        for label, text in texts.items():
            here.add(label, text)
            there.add(label, text)
        for query in ["ledger", "invoice export", "session cache TTL", "15 minute tokens"]:
            a, b = here.search(query), there.search(query)
            assert set(a) == set(b) and max(a, key=a.__getitem__) == max(b, key=b.__getitem__), query
            assert all(abs(a[k] - b[k]) < 0.05 for k in a), (query, a, b)
    finally:
        there.close()


def _kept_and_counted(store: PostgresMemoryStore) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(word -> (memories, total length)) as the database keeps it (counts plus unfolded changes,
    the empty word holding the totals), and as a full count of the postings gives it."""
    with store._cursor() as cur:
        kept = cur.execute(
            "SELECT lexeme, sum(df)::int AS df, sum(length)::int AS length FROM (SELECT * FROM lexical_counts "
            "UNION ALL SELECT * FROM lexical_changes) AS k GROUP BY lexeme HAVING sum(df) != 0"
        ).fetchall()
        counted = cur.execute(
            "SELECT lexeme, count(*)::int AS df, 0 AS length FROM memory_terms GROUP BY lexeme UNION ALL "
            "SELECT '', count(*)::int, sum(length)::int FROM memory_lexemes HAVING count(*) > 0"
        ).fetchall()
    return {r["lexeme"]: (r["df"], r["length"]) for r in kept}, {r["lexeme"]: (r["df"], r["length"]) for r in counted}


def test_the_team_lane_reads_word_counts_the_database_keeps_exact_through_folds_forgets_and_two_writers(
    postgres: PostgresServer,
) -> None:
    """Every search reads the counts current (a memory another server staged is counted at once);
    they equal a full count of the postings across a fold (every FOLD_EVERY staged memories), two
    servers staging at once and a forget, after which no row names a word only forgotten memories
    held."""
    there, other = Memories(postgres), Memories(postgres)
    assert there.store is not None and there.index is not None
    other.store = PostgresMemoryStore(postgres.url(), there.index.namespace, owner=False)
    try:
        there.add("a", "Redis session cache with a 15 minute TTL")
        assert not there.lane.knows("GDPR") and there.lane.known_share("GDPR cache") < 1
        other.add("b", "GDPR export of every invoice")
        assert there.lane.knows("GDPR") and there.lane.known_share("GDPR cache") == 1.0
        there.labels |= other.labels
        assert list(there.search("GDPR")) == ["b"]

        def stage(memories: Memories, prefix: str) -> None:
            for i in range(FOLD_EVERY // 2 + 20):
                memories.add(f"{prefix}{i}", f"Billing ledger note {i} {prefix}only on invoices")

        writers = [threading.Thread(target=stage, args=(m, p)) for m, p in ((there, "x"), (other, "y"))]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        kept, counted = _kept_and_counted(there.store)
        assert kept == counted and kept["ledger"][0] == 2 * (FOLD_EVERY // 2 + 20)
        with there.store._cursor() as cur:
            waiting = cur.execute("SELECT count(*) AS n FROM lexical_changes").fetchone()
        assert waiting is not None and waiting["n"] < 20 * (FOLD_EVERY // 2)  # folded at least once

        forgotten = [m for m, label in {**there.labels, **other.labels}.items() if label.startswith("y")]
        there.store.forget("f1", forgotten)
        kept, counted = _kept_and_counted(there.store)
        with there.store._cursor() as cur:
            x, y = (
                cur.execute("SELECT lexeme FROM unnest(lexical_vector(%s))", (word,)).fetchone()["lexeme"]
                for word in ("xonly", "yonly")
            )  # type: ignore[index]
            named = cur.execute(
                "SELECT count(*) AS n FROM (SELECT lexeme FROM lexical_counts UNION ALL "
                "SELECT lexeme FROM lexical_changes) AS k WHERE lexeme = %s",
                (y,),
            ).fetchone()
        assert kept == counted and y not in kept and x in kept
        assert named is not None and named["n"] == 0
        assert not there.lane.knows("yonly") and there.lane.knows("xonly")

        there.store.import_memories(
            [memory(f"z{i}", context=f"Imported note {i} zonly") for i in range(FOLD_EVERY + 9)]
        )
        kept, counted = _kept_and_counted(there.store)
        assert kept == counted and kept[""][0] == FOLD_EVERY // 2 + 22 + FOLD_EVERY + 9
        with there.store._cursor() as cur:
            waiting = cur.execute("SELECT count(*) AS n FROM lexical_changes").fetchone()
        assert waiting is not None and waiting["n"] == 0  # an import folds as it ends
    finally:
        other.store.close()
        there.close()


def test_a_word_most_memories_hold_reads_only_its_newest_postings_and_scores_stay_exact(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past POSTINGS_BREADTH holders, a word picks candidates from its newest postings only; a rarer
    word's holders are all candidates however old, and every score is the exact BM25."""
    there = Memories(postgres)
    try:
        for i in range(12):
            there.add(
                f"m{i}", f"Billing note {i} on the billing service" + (" and its ledger lock" if i in (0, 5) else "")
            )
        exact = there.search("billing ledger", 5)
        monkeypatch.setattr(team_lexical, "POSTINGS_BREADTH", 3)
        wide = there.search("billing ledger", 5)
        assert set(list(exact)[:2]) == set(list(wide)[:2]) == {"m0", "m5"}
        assert list(wide.values()) == pytest.approx(list(exact.values()), abs=1e-12)
        assert set(list(wide)[2:]) <= {"m9", "m10", "m11"} and set(list(exact)[2:]) == {"m1", "m2", "m3"}
        assert len(there.search("billing ledger")) == 12  # no limit: every posting
    finally:
        there.close()


def test_adding_the_same_memory_twice_is_a_no_op() -> None:
    index = LexicalIndex()
    index.add("a", "Redis cache")
    index.add("a", "Redis cache")
    assert len(index) == 1
