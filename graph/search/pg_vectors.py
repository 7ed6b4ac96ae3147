"""Memory chunk vectors in pgvector, the team backend's counterpart of graph.search.vectors.

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
from psycopg import sql

from graph.core.pg_store import connect, migrate, notify, schema_name
from graph.core.store import Memory
from graph.search.embedder import Embedder
from graph.search.vectors import Chunk, memory_chunks

DIMENSIONS = 384
"""The bundled MiniLM's; the table's column is declared with it (migration 2)."""
EF_SEARCH = 200
"""hnsw.ef_search at least this (pgvector's default, 40, found 74% of the exact top 10 on random
vectors here; 200 found all); a larger limit raises it to the limit, up to pgvector's 1000."""


NOTIFY_IDS = 100
"""Memory ids per notification: 100 ids of 36 characters stay well below NOTIFY's 8000 bytes."""


def _literal(vector: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectorIndex:
    """VectorIndex's surface (add_memories, search, nearest_chunks, indexed_memory_ids, count,
    optimize, dimensions) over pgvector. One connection under a lock, like the store."""

    def __init__(self, url: str, namespace: str, embedder: Embedder) -> None:
        self.dimensions = embedder.dimensions
        if self.dimensions != DIMENSIONS:
            raise ValueError(f"the team index holds {DIMENSIONS}-d vectors; the model makes {self.dimensions}-d ones")
        self._embedder = embedder
        self._lock = threading.Lock()
        self._url, self.namespace = url, namespace
        self._conn = self._open()
        self._ef_search = EF_SEARCH
        row = self._conn.execute("SELECT count(*) AS n FROM memory_chunks").fetchone()
        self._count = int(row["n"]) if row else 0

    def _open(self) -> psycopg.Connection[dict[str, Any]]:
        conn = connect(self._url)
        try:
            migrate(conn, self.namespace)
            conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(self.namespace))))
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(EF_SEARCH),))
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> psycopg.Connection[dict[str, Any]]:
        """Under the lock: the connection, opened again if the server dropped it."""
        if self._conn.broken or self._conn.closed:
            self._conn = self._open()
            self._ef_search = EF_SEARCH
        return self._conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

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
        with self._lock:
            conn = self._connection()
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_chunks (memory_id, topic_id, field, chunk_index, text, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s::vector) ON CONFLICT (memory_id, chunk_index) DO NOTHING",
                    rows,
                )
                ids = list(dict.fromkeys(c.memory_id for c in chunks))
                for start in range(0, len(ids), NOTIFY_IDS):  # the other servers add them to their catalogs
                    notify(cur, self.namespace, "searchable", ids[start : start + NOTIFY_IDS])
            self._count += len(rows)
        return len(rows)

    def note_added(self, rows: int) -> None:
        """Chunks another server added (graph.search.remote_changes): they bound the search limit too."""
        with self._lock:
            self._count += rows

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The nearest chunks as (memory_id, cosine similarity), best first (HNSW)."""
        return [(chunk.memory_id, similarity) for chunk, similarity in self.nearest_chunks(vector, limit)]

    def nearest_chunks(self, vector: list[float], limit: int) -> list[tuple[Chunk, float]]:
        if limit <= 0:
            return []
        query = _literal(np.asarray(vector, dtype=np.float32))
        with self._lock:
            conn = self._connection()
            breadth = min(max(EF_SEARCH, limit), 1000)  # pgvector's ceiling
            if breadth != self._ef_search:
                conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(breadth),))
                self._ef_search = breadth
            rows = conn.execute(
                "SELECT memory_id, topic_id, field, chunk_index, text, -(embedding <#> %s::vector) AS similarity "
                "FROM memory_chunks ORDER BY embedding <#> %s::vector LIMIT %s",
                (query, query, limit),
            ).fetchall()
        return [
            (Chunk(r["memory_id"], r["topic_id"], r["field"], r["chunk_index"], r["text"]), float(r["similarity"]))
            for r in rows
        ]

    def indexed_memory_ids(self) -> set[str]:
        with self._lock:
            rows = self._connection().execute("SELECT DISTINCT memory_id FROM memory_chunks").fetchall()
        return {row["memory_id"] for row in rows}

    def count(self) -> int:
        """Rows at open plus the adds this process made or heard of (a bound for the search limit, not a census)."""
        return self._count

    def optimize(self) -> None:
        """Postgres maintains the HNSW index as rows arrive; nothing to compact."""
