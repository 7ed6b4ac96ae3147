"""The team backend's log of reconcile decisions (graph.backends.decision_log): the namespace's
`reconcile_log` table (migration 12), one row a record (a decision or an undo), appended in `seq` order,
so a decision made through one server is shown, ranked and undone through every server of the namespace.

No seal: a row is in the team database, which only its credentials reach, beside the memories whose
status a restore changes (the file's seal answers a cloned repository's `.flowbaby/`, which a team server
does not read for this). A row that does not parse as a record is skipped, as a file's line is.
Each read asks the table's size and last `seq` (one index scan) and reads every row again only when
either moved (another server's decision, undo or forget).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from graph.backends.decision_log import DecisionLog, Entry, fold, forgotten_marks
from graph.backends.team.pool import acquire_pool, release_pool
from graph.backends.team.schema import configure_connection, connect, describe_url

_KEY = "SELECT count(*) AS n, coalesce(max(seq), 0) AS last FROM reconcile_log"
_ROWS = "SELECT seq, record FROM reconcile_log ORDER BY seq"
_FORGET = (
    "DELETE FROM reconcile_log WHERE entry_id IN "
    "(SELECT entry_id FROM reconcile_log WHERE EXISTS (SELECT 1 FROM unnest(%s::text[]) m WHERE strpos(record, m) > 0))"
)
"""The records naming a forgotten topic or version, with every other record of their decisions (its undo)."""


def _records(rows: list[dict[str, Any]]) -> list[Any]:
    found = []
    for row in rows:
        try:
            found.append(json.loads(row["record"]))
        except ValueError:
            continue
    return found


class PgDecisionLog(DecisionLog):
    """The namespace's decisions through the process's connection pool (graph.backends.team.pool)."""

    def __init__(self, url: str, namespace: str) -> None:
        super().__init__()
        self._url, self._namespace = url, namespace
        self._pool = acquire_pool(url, namespace, describe_url(url)[0], configure_connection(namespace), connect)
        self._cache: tuple[tuple[int, int], dict[str, Entry]] | None = None

    def _append(self, record: dict[str, Any]) -> None:
        text = json.dumps(record)  # ASCII: no lone surrogate can stop the row (forget's marks are written alike)
        with self._pool.connection() as conn:
            conn.execute(b"INSERT INTO reconcile_log (entry_id, record) VALUES (%s, %s)", (record["id"], text))

    def entries(self) -> dict[str, Entry]:
        with self._pool.connection() as conn:
            row = conn.execute(_KEY.encode()).fetchone()
            key = (int(row["n"]), int(row["last"])) if row else (0, 0)
            with self._lock:
                if self._cache is not None and self._cache[0] == key:
                    return self._cache[1]
            rows = conn.execute(_ROWS.encode()).fetchall()
        found = fold(_records(rows))
        with self._lock:
            self._cache = ((len(rows), int(rows[-1]["seq"]) if rows else 0), found)
        return found

    def import_entries(self, entries: Iterable[Entry]) -> int:
        """`flowbaby migrate`: another log's decisions, each with its undo when it was undone, after this
        one's; a decision whose id is here already is skipped (a second run copies nothing twice). How many
        decisions were copied."""
        with self._pool.connection() as conn:
            here = {row["entry_id"] for row in conn.execute(b"SELECT DISTINCT entry_id FROM reconcile_log")}
            rows: list[tuple[str, str]] = []
            copied = 0
            for entry in entries:
                if entry.id in here:
                    continue
                copied += 1
                rows.append((entry.id, json.dumps(entry.model_dump(mode="json", exclude={"restoredAt"}))))
                if entry.restoredAt is not None:
                    rows.append((entry.id, json.dumps({"id": entry.id, "restoredAt": entry.restoredAt})))
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(b"INSERT INTO reconcile_log (entry_id, record) VALUES (%s, %s)", rows)
        return copied

    def forget(self, topic_ids: set[str], memory_ids: set[str]) -> int:
        marks = forgotten_marks(topic_ids, memory_ids, ascii_only=True)
        with self._pool.connection() as conn:
            return conn.execute(_FORGET.encode(), (marks,)).rowcount

    def close(self) -> None:
        release_pool(self._url, self._namespace)
