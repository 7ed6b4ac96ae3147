"""Bookkeeping of the session index in `.flowbaby/sessions/index.sqlite`: which sessions were
imported, their watermarks and fingerprints, and every chunk's text (vectors live in LanceDB)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.backends.embedded.sealed_db import check_sealed_db, new_sealed_db
from graph.core.session_chunk import TurnChunk

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY, source TEXT NOT NULL, session_id TEXT NOT NULL, directory TEXT NOT NULL,
    title TEXT NOT NULL, fingerprint TEXT NOT NULL, watermark TEXT NOT NULL, imported_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    embedding_id TEXT PRIMARY KEY, session_key TEXT NOT NULL, message_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL, ord INTEGER NOT NULL, role TEXT NOT NULL, created_ms INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_session ON chunks (session_key, ord, message_id, chunk_index);
CREATE INDEX IF NOT EXISTS chunks_message ON chunks (session_key, message_id);
"""


@dataclass(frozen=True)
class Imported:
    key: str
    fingerprint: str
    watermark: dict[str, Any]
    imported_at: str
    chunks: int


class SessionStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict(
            self._db.execute("SELECT session_key, count(*) FROM chunks GROUP BY session_key").fetchall()
        )

    def imported(self, key: str) -> Imported | None:
        with self._lock:
            row = self._db.execute(
                "SELECT fingerprint, watermark, imported_at FROM sessions WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return Imported(key, row[0], json.loads(row[1]), row[2], self._counts.get(key, 0))

    def chunk_count(self, key: str) -> int:
        return self._counts.get(key, 0)

    def texts(self, key: str, message_ids: Iterable[str]) -> dict[str, str]:
        """embedding_id -> text of these messages' current chunks."""
        ids = list(message_ids)
        out: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                out.update(
                    self._db.execute(
                        f"SELECT embedding_id, text FROM chunks WHERE session_key = ? AND message_id IN ({marks})",
                        [key, *part],
                    ).fetchall()
                )
        return out

    def replace_messages(self, key: str, message_ids: list[str], chunks: list[TurnChunk], full: bool) -> None:
        """The messages' chunks become exactly `chunks` (with `full`, the session's do)."""
        with self._lock:
            self._db.execute("BEGIN")
            if full:
                self._db.execute("DELETE FROM chunks WHERE session_key = ?", (key,))
            else:
                for start in range(0, len(message_ids), 500):
                    part = message_ids[start : start + 500]
                    marks = ",".join("?" * len(part))
                    self._db.execute(
                        f"DELETE FROM chunks WHERE session_key = ? AND message_id IN ({marks})", [key, *part]
                    )
            self._db.executemany(
                "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (c.embedding_id, key, c.message_id, c.chunk_index, c.order, c.role, c.created_ms, c.text)
                    for c in chunks
                ],
            )
            self._db.execute("COMMIT")
            (count,) = self._db.execute("SELECT count(*) FROM chunks WHERE session_key = ?", (key,)).fetchone()
            self._counts[key] = count

    def mark_imported(
        self, key: str, source: str, session_id: str, directory: str, title: str, fingerprint: str,
        watermark: dict[str, Any], imported_at: str,
    ) -> None:  # fmt: skip
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, source, session_id, directory, title, fingerprint, json.dumps(watermark), imported_at),
            )

    def chunk_ids(self, key: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT embedding_id FROM chunks WHERE session_key = ?", (key,))]

    def chunks_by_id(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in self._db.execute(
                    "SELECT embedding_id, session_key, message_id, chunk_index, ord, role, created_ms, text "
                    f"FROM chunks WHERE embedding_id IN ({marks})",
                    part,
                ):
                    out[row[0]] = dict(
                        zip(
                            (
                                "embedding_id",
                                "session_key",
                                "message_id",
                                "chunk_index",
                                "ord",
                                "role",
                                "created_ms",
                                "text",
                            ),
                            row,
                            strict=True,
                        )
                    )
        return out

    def turns(self, key: str) -> list[tuple[str, int, str, int]]:
        """(message_id, ord, role, created_ms) of every indexed turn, in session order."""
        with self._lock:
            return self._db.execute(
                "SELECT message_id, ord, role, min(created_ms) FROM chunks WHERE session_key = ? "
                "GROUP BY message_id ORDER BY ord, message_id",
                (key,),
            ).fetchall()

    def turn_texts(self, key: str, message_ids: list[str]) -> dict[str, str]:
        out: dict[str, list[str]] = {}
        with self._lock:
            marks = ",".join("?" * len(message_ids))
            for mid, text in self._db.execute(
                f"SELECT message_id, text FROM chunks WHERE session_key = ? AND message_id IN ({marks}) "
                "ORDER BY chunk_index",
                [key, *message_ids],
            ):
                out.setdefault(mid, []).append(text)
        return {mid: "\n".join(parts) for mid, parts in out.items()}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def keys_under(self, root: str) -> list[str]:
        prefix = root.rstrip("/") + "/"
        with self._lock:
            rows = self._db.execute("SELECT key, directory FROM sessions").fetchall()
        return [key for key, directory in rows if directory == root or directory.startswith(prefix)]

    def record(self, key: str) -> tuple[str, str, str, str] | None:
        """(source, session_id, directory, title) of an imported session."""
        with self._lock:
            row = self._db.execute(
                "SELECT source, session_id, directory, title FROM sessions WHERE key = ?", (key,)
            ).fetchone()
        return (row[0], row[1], row[2], row[3]) if row else None

    def import_marks(self) -> dict[str, str]:
        """Every imported session's key -> when its chunks were last written (the lexical lane's check)."""
        with self._lock:
            return dict(self._db.execute("SELECT key, imported_at FROM sessions").fetchall())

    def keys_for(self, session_id: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT key FROM sessions WHERE session_id = ?", (session_id,))]


SESSIONS_PURPOSE = "session-index"


def open_sealed_session_store(folder: Path, root: Path) -> SessionStore:
    """The session index of the workspace `root`: an existing one only if flowbaby made it in this
    folder (graph.backends.embedded.sealed_db), so a repository that commits
    `.flowbaby/sessions/index.sqlite` cannot have its text searched as the user's own sessions."""
    path = folder / "index.sqlite"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not new_sealed_db(path, SESSIONS_PURPOSE, root):
        check_sealed_db(path, SESSIONS_PURPOSE, root, "session index", "none of its sessions are searched")
    return SessionStore(path)
