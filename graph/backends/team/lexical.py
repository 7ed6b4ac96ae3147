"""The lexical lane on Postgres full-text, the team backend's counterpart of graph.core.lexical.

The database keeps each memory's words: a trigger on `memories` writes, in the staging transaction
(migration 5), `memory_lexemes` (a tsvector of the memory's whole text, GIN-indexed, and its length)
and `memory_terms` (the tsvector's postings: word, memory number, count, memory length), so no
server rebuilds an index at start and every server sees every memory.
Words are runs of letters and digits (`redis-cache` -> redis, cache; `E_LEDGER_LOCK` -> e, ledger,
lock; `billing/reconcile.py` -> billing, reconcile, py, as graph.core.text splits them), then
Postgres' `english` configuration (its stopwords, the Snowball stemmer).

The score is the in-memory lane's: BM25 (k1 1.2, b 0.75) self-normalised by what the query could
reach, summed in SQL over the postings of the query's words, so fusion weights, match floors and
abstention cuts keep their meaning. ts_rank_cd ranks much worse, and BM25 over the tsvector alone
(unnesting every matching memory's tsvector for its counts) was 5-7x slower than over postings
(INGEST_CONTRACT.md 15.15). The corpus statistics BM25 and abstention read (the memory count, the
mean length, each word's document frequency) would cost a scan of every memory or of a word's
postings (185 ms for a common word at 1M memories); the database keeps them instead (migration 11:
`lexical_counts`, folded from the staging trigger's `lexical_changes`), so every search reads them
current, with the query's words, in one statement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graph.backends.team.pool import acquire_pool, release_pool
from graph.backends.team.schema import configure_connection, connect, describe_url, migrate
from graph.core.lexical import K1, B

POSTINGS_BREADTH = 5_000
"""A word more memories hold than this picks candidates from only its newest this many postings
(_SEARCH_WIDE); below it, and for a search without a limit, every posting is read."""
SHORTLIST_PER_RESULT = 2
"""_SEARCH_WIDE scores exactly the best `limit` times this many candidates by their picked postings."""

_WORDS = """
    WITH words AS (
        SELECT lexeme, array_length(positions, 1)::float8 AS qtf FROM unnest(lexical_vector(%(text)s))
        UNION ALL SELECT '', 0
    ),
    kept AS (
        SELECT lexeme, df, length FROM lexical_counts WHERE lexeme IN (SELECT lexeme FROM words)
        UNION ALL
        SELECT lexeme, df, length FROM lexical_changes WHERE lexeme IN (SELECT lexeme FROM words)
    )
    SELECT w.lexeme, w.qtf, coalesce(sum(k.df), 0)::float8 AS df, coalesce(sum(k.length), 0)::float8 AS length
    FROM words w LEFT JOIN kept k USING (lexeme)
    GROUP BY w.lexeme, w.qtf
"""
"""Each distinct word of a text, split as the trigger splits a memory's, how often the text writes it
and how many memories hold it, and under the empty word (which no text splits into) the namespace's
memory count and their total length: a kept count plus the changes not folded yet (migration 11),
an index probe each."""

_SCORE = "terms.weight * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s))"
"""One posting's share of a memory's BM25 (`terms.weight`: the word's count in the query times its idf)."""

_TERMS = "WITH terms AS (SELECT * FROM unnest(%(words)s::text[], %(weights)s::float8[]) AS t(lexeme, weight)),"
"""The query's words with their weights, as both searches take them."""
_NAMED = (
    "SELECT m.memory_id, best.bm25 FROM best JOIN memory_lexemes m ON m.doc = best.doc"
    " ORDER BY best.bm25 DESC, best.doc"
)
"""Both searches' best memories by id, best first (ties in staging order); the ids come from the
index on (doc) INCLUDE (memory_id) alone (migration 11), not from the wide tsvector rows."""

_SEARCH = f"""
    {_TERMS}
    best AS (
        SELECT p.doc, sum({_SCORE}) AS bm25
        FROM terms JOIN memory_terms p ON p.lexeme = terms.lexeme
        GROUP BY p.doc
        ORDER BY bm25 DESC, p.doc
        LIMIT %(limit)s
    )
    {_NAMED}
"""
"""BM25 over the postings of the query's words (an index range each), each word weighed by its
count in the query times its idf, summed per memory by its integer `doc` (staging order, which also
breaks ties, as LexicalIndex's position does)."""

_SEARCH_WIDE = f"""
    {_TERMS}
    picked AS (
        SELECT p.doc, sum({_SCORE}) AS partial
        FROM terms, LATERAL (
            SELECT doc, tf, length FROM memory_terms p WHERE p.lexeme = terms.lexeme
            ORDER BY p.doc DESC LIMIT %(breadth)s
        ) AS p
        GROUP BY p.doc
        ORDER BY partial DESC, p.doc
        LIMIT %(shortlist)s
    ),
    best AS (
        SELECT picked.doc, sum({_SCORE}) AS bm25
        FROM picked CROSS JOIN terms, LATERAL (
            SELECT tf, length FROM memory_terms p WHERE p.lexeme = terms.lexeme AND p.doc = picked.doc LIMIT 1
        ) AS p
        GROUP BY picked.doc
        ORDER BY bm25 DESC, picked.doc
        LIMIT %(limit)s
    )
    {_NAMED}
"""
"""_SEARCH when some query word is in more than POSTINGS_BREADTH memories, whose full postings would
cost time linear in the namespace: candidates are every holder of a rarer word and the newest
POSTINGS_BREADTH holders of a commoner one; the best `limit` * SHORTLIST_PER_RESULT of them by those
postings are scored exactly over all the query's words, a primary-key probe each (the LATERAL's LIMIT
keeps the planner from hash-joining a common word's every posting instead). A memory only common
words match, older than their newest POSTINGS_BREADTH holders, is not a candidate."""


@dataclass(frozen=True)
class _Totals:
    """The namespace's memory count and their mean length (in words), as a search read them."""

    n: float
    average: float


def _idf(n: float, df: float) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


class PgLexicalIndex:
    """LexicalIndex's surface over the namespace's `memory_lexemes`, through the process's connection
    pool (graph.backends.team.pool), shared with the memory store."""

    def __init__(self, url: str, namespace: str) -> None:
        self._url, self.namespace = url, namespace
        with connect(url) as conn:
            migrate(conn, namespace)
        self._pool = acquire_pool(url, namespace, describe_url(url)[0], configure_connection(namespace), connect)

    def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(query.encode(), params).fetchall()

    def close(self) -> None:
        release_pool(self._url, self.namespace)

    def add(self, memory_id: str, text: str) -> None:
        """Nothing to do: the database indexed and counted the memory when it was staged."""

    def _terms(self, text: str) -> tuple[_Totals, list[tuple[str, float, float]]]:
        """The namespace's totals, and (word, count in the text, memories holding it) for each distinct word."""
        rows = self._rows(_WORDS, {"text": text})
        totals = next(row for row in rows if row["lexeme"] == "")
        n = totals["df"]
        stats = _Totals(n, totals["length"] / n if n else 1.0)
        return stats, [(row["lexeme"], row["qtf"], row["df"]) for row in rows if row["lexeme"] != ""]

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        """memory_id -> normalised BM25 in [0, 1], best first (ties by staging order)."""
        stats, terms = self._terms(query)
        weighted = [(word, qtf * _idf(stats.n, df)) for word, qtf, df in terms if df > 0]
        if not weighted:
            return {}
        attainable = sum(weight for _, weight in weighted) * (K1 + 1)
        params = {
            "words": [word for word, _ in weighted],
            "weights": [weight for _, weight in weighted],
            "average": stats.average,
            "limit": limit,
            "k1": K1,
            "b": B,
        }
        statement = _SEARCH
        if limit is not None and any(df > POSTINGS_BREADTH for _, _, df in terms):
            statement = _SEARCH_WIDE
            params |= {"breadth": POSTINGS_BREADTH, "shortlist": SHORTLIST_PER_RESULT * limit}
        rows = self._rows(statement, params)
        return {row["memory_id"]: float(row["bm25"]) / attainable for row in rows}

    def knows(self, text: str) -> bool:
        """Whether every word of the text is in some memory."""
        return all(df > 0 for _, _, df in self._terms(text)[1])

    def known_share(self, query: str) -> float:
        """The share of the query's term weight on words some memory holds (LexicalIndex.known_share)."""
        stats, terms = self._terms(query)
        if not stats.n or not terms:
            return 1.0
        weights = [(qtf * _idf(stats.n, df), df) for _, qtf, df in terms]
        total = sum(w for w, _ in weights)
        return sum(w for w, df in weights if df) / total if total > 0 else 1.0
