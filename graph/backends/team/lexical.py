"""The lexical lane on Postgres full-text, the team backend's counterpart of graph.search.lexical.

The database keeps each memory's words: a trigger on `memories` writes, in the staging transaction
(migration 5), `memory_lexemes` (a tsvector of the memory's whole text, GIN-indexed, and its length)
and `memory_terms` (the tsvector's postings: word, memory number, count, memory length), so no
server rebuilds an index at start and every server sees every memory.
Words are runs of letters and digits (`redis-cache` -> redis, cache; `E_LEDGER_LOCK` -> e, ledger,
lock; `billing/reconcile.py` -> billing, reconcile, py, as graph.search.text splits them), then
Postgres' `english` configuration (its stopwords, the Snowball stemmer).

The score is the in-memory lane's: BM25 (k1 1.2, b 0.75) self-normalised by what the query could
reach, computed in one SQL statement over the postings, so fusion weights, match floors and
abstention cuts keep their meaning. ts_rank_cd ranks much worse, and BM25 over the tsvector alone
(unnesting every matching memory's tsvector for its counts) was 5-7x slower than over postings
(INGEST_CONTRACT.md 15). The GIN index answers whether words are known (knows, known_share).
"""

from __future__ import annotations

import math
from typing import Any

from graph.backends.team.memory_store import configure_connection, connect, describe_url, migrate
from graph.backends.team.pool import acquire_pool, release_pool
from graph.search.lexical import K1, B

_TERMS = """
    SELECT q.lexeme, array_length(q.positions, 1)::float8 AS qtf,
        (SELECT count(*) FROM memory_lexemes m WHERE m.lexemes @@ ('''' || q.lexeme || '''')::tsquery)::float8 AS df
    FROM unnest(lexical_vector(%(query)s)) AS q
"""
"""Each distinct word of the query, how often the query writes it, and how many memories hold it
(lexemes are letters and digits only, so quoting them as a tsquery needs no escaping)."""

_SEARCH = """
    WITH totals AS MATERIALIZED (
        SELECT count(*)::float8 AS n, coalesce(sum(length)::float8 / nullif(count(*), 0), 1) AS average
        FROM memory_lexemes
    ),
    terms AS MATERIALIZED (
        SELECT q.lexeme, array_length(q.positions, 1)::float8 AS qtf,
            ln(1 + (totals.n - d.df + 0.5) / (d.df + 0.5)) AS idf
        FROM unnest(lexical_vector(%(query)s)) AS q, totals,
            LATERAL (SELECT count(*)::float8 AS df FROM memory_terms p WHERE p.lexeme = q.lexeme) AS d
        WHERE d.df > 0
    ),
    best AS (
        SELECT p.doc, sum(
            terms.qtf * terms.idf * p.tf * (%(k1)s + 1)
            / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.length / totals.average))
        ) AS bm25
        FROM terms JOIN memory_terms p ON p.lexeme = terms.lexeme CROSS JOIN totals
        GROUP BY p.doc
        ORDER BY bm25 DESC, p.doc
        LIMIT %(limit)s
    )
    SELECT m.memory_id, best.bm25 / (SELECT sum(qtf * idf * (%(k1)s + 1)) FROM terms) AS score
    FROM best JOIN memory_lexemes m ON m.doc = best.doc
    ORDER BY best.bm25 DESC, best.doc
"""
"""BM25 over the postings of the query's words (an index range each), summed per memory by its
integer `doc` (staging order, which also breaks ties, as LexicalIndex's position does)."""


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
        """Nothing to do: the database indexed the memory when it was staged."""

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        """memory_id -> normalised BM25 in [0, 1], best first (ties by memory id)."""
        rows = self._rows(_SEARCH, {"query": query, "limit": limit, "k1": K1, "b": B})
        return {row["memory_id"]: float(row["score"]) for row in rows}

    def _terms(self, text: str) -> tuple[float, list[dict[str, Any]]]:
        rows = self._rows(
            f"SELECT (SELECT count(*) FROM memory_lexemes)::float8 AS n, t.* FROM ({_TERMS}) AS t", {"query": text}
        )
        return (rows[0]["n"] if rows else 0.0), rows

    def knows(self, text: str) -> bool:
        """Whether every word of the text is in some memory."""
        return all(row["df"] > 0 for row in self._terms(text)[1])

    def known_share(self, query: str) -> float:
        """The share of the query's term weight on words some memory holds (LexicalIndex.known_share)."""
        n, rows = self._terms(query)
        if not n or not rows:
            return 1.0
        weights = [(row["qtf"] * math.log(1 + (n - row["df"] + 0.5) / (row["df"] + 0.5)), row["df"]) for row in rows]
        total = sum(w for w, _ in weights)
        return sum(w for w, df in weights if df) / total if total > 0 else 1.0
