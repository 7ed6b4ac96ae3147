"""Session memory in the namespace's Postgres schema (migration 6), the team backend's
counterpart of graph.backends.embedded.session_store (bookkeeping, chunk texts) and
graph.backends.embedded.session_vectors.

Vectors sit in an unsized pgvector column: the session encoder's size is read from the model at
run time, and a migration is fixed SQL; the size in use is recorded in `session_vector_model`,
and vectors of another size (another model) are dropped, as the LanceDB table is made again.
Searches are scoped to sessions, so they are exact (a B-tree on the session, then inner product on
its rows): no HNSW, which would filter an approximate top-k afterwards and miss a small session's
chunks. A 3,000-message session (about 5,000 chunks) searches in 7-17 ms (p50, loaded machine),
against about 1 ms in memory (INGEST_CONTRACT.md 15.16).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from graph.backends.embedded.session_store import Imported
from graph.backends.team.pool import acquire_pool, release_pool
from graph.backends.team.schema import configure_connection, connect, describe_url, migrate
from graph.core.session_chunk import TurnChunk

_CHUNK_COLUMNS = ("embedding_id", "session_key", "message_id", "chunk_index", "ord", "role", "created_ms", "text")


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


class _Namespace:
    """The namespace's schema through the process's connection pool (graph.backends.team.pool), shared with
    the memory store: DATABASE_UNAVAILABLE / DATABASE_BUSY when it cannot serve, as there."""

    def __init__(self, url: str, namespace: str) -> None:
        self._url, self.namespace = url, namespace
        with connect(url) as conn:
            migrate(conn, namespace)
        self._pool = acquire_pool(url, namespace, describe_url(url)[0], configure_connection(namespace), connect)

    def _rows(self, query: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(query.encode(), params).fetchall()

    def _run(self, query: str, params: tuple[Any, ...] = ()) -> None:
        with self._pool.connection() as conn:
            conn.execute(query.encode(), params)

    def close(self) -> None:
        release_pool(self._url, self.namespace)


class PgSessionStore(_Namespace):
    """SessionStore's surface over `session_records` and `session_chunks`."""

    def imported(self, key: str) -> Imported | None:
        rows = self._rows("SELECT fingerprint, watermark, imported_at FROM session_records WHERE key = %s", (key,))
        if not rows:
            return None
        row = rows[0]
        return Imported(
            key, row["fingerprint"], json.loads(row["watermark"]), row["imported_at"], self.chunk_count(key)
        )

    def chunk_count(self, key: str) -> int:
        return int(self._rows("SELECT count(*) AS n FROM session_chunks WHERE session_key = %s", (key,))[0]["n"])

    def texts(self, key: str, message_ids: Iterable[str]) -> dict[str, str]:
        """embedding_id -> text of these messages' current chunks."""
        rows = self._rows(
            "SELECT embedding_id, text FROM session_chunks WHERE session_key = %s AND message_id = ANY(%s)",
            (key, list(message_ids)),
        )
        return {row["embedding_id"]: row["text"] for row in rows}

    def replace_messages(self, key: str, message_ids: list[str], chunks: list[TurnChunk], full: bool) -> None:
        """The messages' chunks become exactly `chunks` (with `full`, the session's do)."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            if full:
                cur.execute("DELETE FROM session_chunks WHERE session_key = %s", (key,))
            else:
                cur.execute(
                    "DELETE FROM session_chunks WHERE session_key = %s AND message_id = ANY(%s)", (key, message_ids)
                )
            if chunks:
                with cur.copy(f"COPY session_chunks ({', '.join(_CHUNK_COLUMNS)}) FROM STDIN".encode()) as copy:
                    for c in chunks:
                        copy.write_row(
                            (
                                c.embedding_id,
                                key,
                                c.message_id,
                                c.chunk_index,
                                c.order,
                                c.role,
                                c.created_ms,
                                c.text,
                            )
                        )

    def mark_imported(
        self, key: str, source: str, session_id: str, directory: str, title: str, fingerprint: str,
        watermark: dict[str, Any], imported_at: str,
    ) -> None:  # fmt: skip
        self._run(
            "INSERT INTO session_records VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
            "source = EXCLUDED.source, session_id = EXCLUDED.session_id, directory = EXCLUDED.directory, "
            "title = EXCLUDED.title, fingerprint = EXCLUDED.fingerprint, watermark = EXCLUDED.watermark, "
            "imported_at = EXCLUDED.imported_at",
            (key, source, session_id, directory, title, fingerprint, json.dumps(watermark), imported_at),
        )

    def chunk_ids(self, key: str) -> list[str]:
        return [
            r["embedding_id"]
            for r in self._rows("SELECT embedding_id FROM session_chunks WHERE session_key = %s", (key,))
        ]

    def chunks_by_id(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        rows = self._rows(
            f"SELECT {', '.join(_CHUNK_COLUMNS)} FROM session_chunks WHERE embedding_id = ANY(%s)", (ids,)
        )
        return {row["embedding_id"]: row for row in rows}

    def turns(self, key: str) -> list[tuple[str, int, str, int]]:
        """(message_id, ord, role, created_ms) of every indexed turn, in session order."""
        rows = self._rows(
            "SELECT message_id, min(ord) AS ord, min(role) AS role, min(created_ms) AS created_ms FROM session_chunks "
            "WHERE session_key = %s GROUP BY message_id ORDER BY 2, 1",
            (key,),
        )
        return [(r["message_id"], r["ord"], r["role"], r["created_ms"]) for r in rows]

    def turn_texts(self, key: str, message_ids: list[str]) -> dict[str, str]:
        rows = self._rows(
            "SELECT message_id, string_agg(text, E'\\n' ORDER BY chunk_index) AS text FROM session_chunks "
            "WHERE session_key = %s AND message_id = ANY(%s) GROUP BY message_id",
            (key, message_ids),
        )
        return {row["message_id"]: row["text"] for row in rows}

    def keys_under(self, root: str) -> list[str]:
        prefix = root.rstrip("/") + "/"
        rows = self._rows("SELECT key, directory FROM session_records")
        return [r["key"] for r in rows if r["directory"] == root or r["directory"].startswith(prefix)]

    def record(self, key: str) -> tuple[str, str, str, str] | None:
        """(source, session_id, directory, title) of an imported session."""
        rows = self._rows("SELECT source, session_id, directory, title FROM session_records WHERE key = %s", (key,))
        return (rows[0]["source"], rows[0]["session_id"], rows[0]["directory"], rows[0]["title"]) if rows else None

    def import_marks(self) -> dict[str, str]:
        """Every imported session's key -> when its chunks were last written (the lexical lane's check)."""
        return {r["key"]: r["imported_at"] for r in self._rows("SELECT key, imported_at FROM session_records")}

    def keys_for(self, session_id: str) -> list[str]:
        return [r["key"] for r in self._rows("SELECT key FROM session_records WHERE session_id = %s", (session_id,))]


class PgSessionVectors(_Namespace):
    """SessionVectors' surface over `session_vectors` (inner product of unit vectors = cosine)."""

    def __init__(self, url: str, namespace: str, dimensions: int) -> None:
        super().__init__(url, namespace)
        self.dimensions = dimensions
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute("SELECT dimensions FROM session_vector_model FOR UPDATE").fetchone()
            if row is None:
                conn.execute("INSERT INTO session_vector_model (dimensions) VALUES (%s)", (dimensions,))
            elif row["dimensions"] != dimensions:
                conn.execute("DELETE FROM session_vectors")
                conn.execute("UPDATE session_vector_model SET dimensions = %s, variant = ''", (dimensions,))

    def keep_variant(self, variant: str) -> None:
        """Vectors made by another encoder variant are dropped (their sessions need a repair)."""
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute("SELECT variant FROM session_vector_model FOR UPDATE").fetchone()
            if row is not None and row["variant"] == variant:
                return
            conn.execute("DELETE FROM session_vectors")
            conn.execute("UPDATE session_vector_model SET variant = %s", (variant,))

    def count(self, key: str) -> int:
        return int(self._rows("SELECT count(*) AS n FROM session_vectors WHERE session_key = %s", (key,))[0]["n"])

    def total(self) -> int:
        return int(self._rows("SELECT count(*) AS n FROM session_vectors")[0]["n"])

    def ids(self, key: str) -> set[str]:
        return {
            r["embedding_id"]
            for r in self._rows("SELECT embedding_id FROM session_vectors WHERE session_key = %s", (key,))
        }

    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None:
        """Binary COPY into a transaction's scratch table (float4[]), then one upsert casting to vector:
        INSERTs of text literals took 25 s for 7,000 vectors here, most of it formatting floats; a chunk
        another server embedded meanwhile gets this vector."""
        if not ids:
            return
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(
                "CREATE TEMP TABLE IF NOT EXISTS session_vectors_in "
                "(embedding_id TEXT, session_key TEXT, embedding REAL[]) ON COMMIT DELETE ROWS"
            )
            with cur.copy("COPY session_vectors_in FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text", "text", "float4[]"])
                for eid, vector in zip(ids, np.asarray(vectors, dtype=np.float32).tolist(), strict=True):
                    copy.write_row((eid, key, vector))
            cur.execute(
                "INSERT INTO session_vectors SELECT embedding_id, session_key, embedding::vector "
                "FROM session_vectors_in ON CONFLICT (embedding_id) DO UPDATE SET "
                "session_key = EXCLUDED.session_key, embedding = EXCLUDED.embedding"
            )

    def remove(self, key: str, ids: set[str]) -> None:
        if ids:
            self._run(
                "DELETE FROM session_vectors WHERE session_key = %s AND embedding_id = ANY(%s)", (key, sorted(ids))
            )

    def nearest(self, keys: list[str], vector: np.ndarray, limit: int) -> list[tuple[str, str, float]]:
        """(session_key, embedding_id, cosine similarity) of the nearest chunks, best first (exact)."""
        if not keys or limit <= 0:
            return []
        query = _literal(np.asarray(vector, dtype=np.float32))
        rows = self._rows(
            "SELECT session_key, embedding_id, -(embedding <#> %s::vector) AS similarity FROM session_vectors "
            "WHERE session_key = ANY(%s) ORDER BY embedding <#> %s::vector, embedding_id LIMIT %s",
            (query, keys, query, limit),
        )
        return [(r["session_key"], r["embedding_id"], float(r["similarity"])) for r in rows]

    def similarities(self, wanted: dict[str, list[str]], vector: np.ndarray) -> dict[str, float]:
        """embedding id -> cosine similarity with `vector`, for the given chunks of each session."""
        ids = [eid for eids in wanted.values() for eid in eids]
        if not ids:
            return {}
        rows = self._rows(
            "SELECT embedding_id, -(embedding <#> %s::vector) AS similarity FROM session_vectors "
            "WHERE embedding_id = ANY(%s)",
            (_literal(np.asarray(vector, dtype=np.float32)), ids),
        )
        return {r["embedding_id"]: float(r["similarity"]) for r in rows}

    def clear(self) -> None:
        self._run("DELETE FROM session_vectors")

    def optimize(self) -> None:
        """Postgres keeps its tables; nothing to compact."""
