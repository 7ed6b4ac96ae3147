"""Listening to a namespace's changes on the team backend, so that every server's in-memory caches
follow what the other servers do.

The stores NOTIFY on the namespace's channel (graph.backends.team.schema.notify): `queued` (an operation
to claim), `searchable` (a memory's vectors are committed), `status` (a memory's status changed).
A notification can be lost (a dropped connection), so every poll period the listener also reads
the chunks that arrived recently and reports their memories as searchable again; consumers ignore
what they already have. One thread and one connection per serving process.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
from psycopg import sql

from graph.backends.team.schema import channel_name, connect, schema_name

log = logging.getLogger("flowbaby.pg_events")

LOOKBACK_SEC = 60.0
"""How far back each poll reads chunk arrivals: a chunk is stamped at its transaction's start and
becomes visible at commit, so a poll must look back further than any embedding transaction lasts."""

Handler = Callable[[str, list[str], dict[str, Any]], None]
"""(kind, ids, the whole payload); called on the listener's thread."""


class NamespaceListener:
    def __init__(self, url: str, namespace: str, handler: Handler, poll_sec: float) -> None:
        self._url, self.namespace = url, namespace
        self._handler = handler
        self._poll_sec = poll_sec
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"flowbaby-listen-{namespace}", daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        """Start listening; returns once LISTEN is in place (or after `timeout`, the thread retrying)."""
        self._thread.start()
        self._ready.wait(timeout)

    def close(self) -> None:
        """Stop; the thread ends at its next wake-up (within a poll period), its connection with it."""
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                with connect(self._url) as conn:
                    self._listen(conn)
            except Exception as exc:  # the database away: poll again after a pause, never die
                log.warning("namespace listener: %s; retrying in %.0fs", exc, self._poll_sec)
                self._stopped.wait(self._poll_sec)

    def _listen(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(self.namespace))))
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel_name(self.namespace))))
        since = conn.execute("SELECT now() - make_interval(secs => %s) AS t", (LOOKBACK_SEC,)).fetchone()["t"]  # type: ignore[index]
        self._ready.set()
        while not self._stopped.is_set():
            for note in conn.notifies(timeout=self._poll_sec):
                try:
                    payload = json.loads(note.payload)
                    self._handler(str(payload["kind"]), list(payload["ids"]), payload)
                except Exception:
                    log.warning("ignored a notification: %r", note.payload[:200], exc_info=True)
                if self._stopped.is_set():
                    return
            rows = conn.execute(
                "SELECT DISTINCT memory_id, now() AS t FROM memory_chunks WHERE added_at > %s", (since,)
            ).fetchall()
            now = rows[0]["t"] if rows else conn.execute("SELECT now() AS t").fetchone()["t"]  # type: ignore[index]
            since = now - timedelta(seconds=LOOKBACK_SEC)
            if rows:
                self._handler("searchable", [row["memory_id"] for row in rows], {"kind": "searchable", "poll": True})
