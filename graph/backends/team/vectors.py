"""Memory chunk vectors in pgvector, the team backend's counterpart of graph.backends.embedded.vectors.

The same chunks (memory_chunks) in the namespace's schema, with an HNSW index on inner product
(the embedder's vectors are unit length, so inner product is the cosine). Searches run in the
database, so every server on the namespace searches every server's vectors; unlike LanceDB's
in-memory exact search, HNSW is approximate (hnsw.ef_search is raised to the limit asked for).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import psycopg

from graph.backends.team.pool import acquire_pool, database_unavailable, release_pool
from graph.backends.team.schema import EF_SEARCH, configure_connection, connect, describe_url, migrate, notify
from graph.backends.vectors import Embedding
from graph.core.contract import FlowbabyError
from graph.core.memories import Memory
from graph.core.memory_chunks import Chunk, memory_chunks

DIMENSIONS = 384
"""The bundled MiniLM's; the table's column is declared with it (migration 2)."""


NOTIFY_IDS = 100
"""Memory ids per notification: 100 ids of 36 characters stay well below NOTIFY's 8000 bytes."""


def _literal(vector: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectorIndex:
    """VectorIndex's surface (add_memories, search, nearest_chunks, indexed_memory_ids, count,
    optimize, dimensions, write_failures) over pgvector, on the namespace's connection pool (shared with the store)."""

    def __init__(self, url: str, namespace: str, embedder: Embedding) -> None:
        self.dimensions = embedder.dimensions
        self.write_failures = 0  # appends are written before they return: a failure raises instead
        if self.dimensions != DIMENSIONS:
            raise ValueError(f"the team index holds {DIMENSIONS}-d vectors; the model makes {self.dimensions}-d ones")
        self._embedder = embedder
        self._count_lock = threading.Lock()
        self._url, self.namespace = url, namespace
        try:
            with connect(url) as conn:
                migrate(conn, namespace)
        except (FlowbabyError, psycopg.OperationalError):  # the store opened a moment ago: the database went away since
            raise database_unavailable(describe_url(url)[0]) from None
        self._pool = acquire_pool(url, namespace, describe_url(url)[0], configure_connection(namespace), connect)
        try:
            with self._pool.connection() as conn:
                row = conn.execute("SELECT count(*) AS n FROM memory_chunks").fetchone()
        except BaseException:
            release_pool(url, namespace)
            raise
        self._count = int(row["n"]) if row else 0

    def close(self) -> None:
        release_pool(self._url, self.namespace)

    def add_memories(self, memories: list[Memory]) -> int:
        """Embed and store all chunks of these memories; returns the number of rows."""
        chunks = [chunk for memory in memories for chunk in memory_chunks(memory)]
        if not chunks:
            return 0
        vectors = self._embedder.encode([c.text for c in chunks])
        rows = [
            (c.memory_id, c.topic_id, c.field, c.chunk_index, c.text, _literal(v))
            for c, v in zip(chunks, vectors, strict=True)
        ]
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_chunks (memory_id, topic_id, field, chunk_index, text, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (memory_id, chunk_index) DO NOTHING",
                rows,
            )
            ids = list(dict.fromkeys(c.memory_id for c in chunks))
            for start in range(0, len(ids), NOTIFY_IDS):  # the other servers add them to their catalogs
                notify(cur, self.namespace, "searchable", ids[start : start + NOTIFY_IDS])
        with self._count_lock:
            self._count += len(rows)
        return len(rows)

    def note_added(self, rows: int) -> None:
        """Chunks another server added (graph.backends.team.change_feed): they bound the search limit too."""
        with self._count_lock:
            self._count += rows

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The nearest chunks as (memory_id, cosine similarity), best first (HNSW)."""
        return [(chunk.memory_id, similarity) for chunk, similarity in self.nearest_chunks(vector, limit)]

    def nearest_chunks(self, vector: list[float], limit: int) -> list[tuple[Chunk, float]]:
        if limit <= 0:
            return []
        query = _literal(np.asarray(vector, dtype=np.float32))
        breadth = min(max(EF_SEARCH, limit), 1000)  # pgvector's ceiling
        search = (
            "SELECT memory_id, topic_id, field, chunk_index, text, -(embedding <#> %s::vector) AS similarity "
            "FROM memory_chunks ORDER BY embedding <#> %s::vector LIMIT %s"
        )
        with self._pool.connection() as conn:
            if breadth == EF_SEARCH:  # the pool's connections have this breadth
                rows = conn.execute(search, (query, query, limit)).fetchall()
            else:
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(breadth),))
                    rows = conn.execute(search, (query, query, limit)).fetchall()
        return [
            (Chunk(r["memory_id"], r["topic_id"], r["field"], r["chunk_index"], r["text"]), float(r["similarity"]))
            for r in rows
        ]

    def indexed_memory_ids(self) -> set[str]:
        with self._pool.connection() as conn:
            rows = conn.execute("SELECT DISTINCT memory_id FROM memory_chunks").fetchall()
        return {row["memory_id"] for row in rows}

    def count(self) -> int:
        """Rows at open plus the adds this process made or heard of (a bound for the search limit, not a census)."""
        return self._count

    def forget(self, memory_ids: list[str]) -> None:
        """Delete these memories' chunk rows (the namespace's other servers search the same table)."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM memory_chunks WHERE memory_id = ANY(%s)", (memory_ids,))
            gone = cur.rowcount
        with self._count_lock:
            self._count = max(0, self._count - gone)

    def optimize(self) -> None:
        """Postgres maintains the HNSW index as rows arrive; nothing to compact."""
