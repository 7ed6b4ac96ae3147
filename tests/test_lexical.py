"""The lexical lane's tokeniser and BM25 index, in-process (pure code, nothing to stand in for)."""

from __future__ import annotations

from graph.search.lexical import LexicalIndex
from graph.search.text import light_stem, tokenize


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


def test_scores_are_self_normalised_and_rank_exact_matches_first() -> None:
    index = LexicalIndex()
    index.add("a", "Invoice exports failed with E_LEDGER_LOCK on the ledger")
    index.add("b", "Ledger schema cleanup dropped unused columns")
    index.add("c", "Redis session cache with a 15 minute TTL")
    scores = index.search("E_LEDGER_LOCK")
    assert max(scores, key=scores.get) == "a"
    assert all(0 < value <= 1 for value in scores.values())
    assert "c" not in scores
    assert index.search("banana") == {} and index.search("the of") == {}


def test_adding_the_same_memory_twice_is_a_no_op() -> None:
    index = LexicalIndex()
    index.add("a", "Redis cache")
    index.add("a", "Redis cache")
    assert len(index) == 1
