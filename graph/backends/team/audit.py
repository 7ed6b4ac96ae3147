"""The audit trail on the team backend: the namespace's `audit_log` table (migration 4).

`record` only queues the entry (it is called on the event loop, and a commit may wait on the
disk); one thread per namespace writes queued entries in batches over its own connection. As
with the file, writing is best effort: a command that happened is not failed by its audit line.
Entries still queued are written at close (for at most CLOSE_WAIT_SEC). A forget's scrub goes
through the same queue, so the lines queued before it are written first and scrubbed too.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Unpack

import psycopg
from psycopg import sql

from graph.backends.team.schema import connect, schema_name
from graph.core.audit import FORGOTTEN, STAGING_COMMANDS, WARN_EVERY_SEC, AuditFields, ForgottenKey, audit_entry

log = logging.getLogger("flowbaby.audit")
BATCH = 200
CLOSE_WAIT_SEC = 5.0
FORGET_WAIT_SEC = 10.0
_STOP = object()


class _Forget:
    """A scrub queued behind the entries before it (graph.core.audit.scrub, as an UPDATE)."""

    def __init__(self, keys: set[ForgottenKey]) -> None:
        self.keys = keys
        self.done = threading.Event()


class PostgresAuditLog:
    def __init__(self, url: str, namespace: str) -> None:
        self._url = url
        self._insert = sql.SQL(
            "INSERT INTO {}.audit_log (at, command, user_name, agent_name, topic_digest, result, error_code, "
            "duration_ms, redacted) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        ).format(sql.Identifier(schema_name(namespace)))
        self._tail = sql.SQL(
            "SELECT at, command, user_name, agent_name, topic_digest, result, error_code, duration_ms "
            "FROM {}.audit_log ORDER BY seq DESC LIMIT %s"
        ).format(sql.Identifier(schema_name(namespace)))
        self._scrub = sql.SQL(
            "UPDATE {}.audit_log SET agent_name = %s, topic_digest = NULL WHERE command = ANY(%s) "
            "AND result = 'success' AND topic_digest = %s AND agent_name IS NOT DISTINCT FROM %s"
        ).format(sql.Identifier(schema_name(namespace)))
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._conn: psycopg.Connection[Any] | None = None
        self._warned_at = -WARN_EVERY_SEC
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name=f"flowbaby-audit-{namespace}", daemon=True)
        self._thread.start()

    def record(self, command: str, **fields: Unpack[AuditFields]) -> None:
        self._queue.put(audit_entry(command, **fields))

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            entries: list[dict[str, Any]] = []
            for item in batch:  # in order: a scrub comes after the entries queued before it
                if isinstance(item, dict):
                    entries.append(item)
                    continue
                if entries:
                    self._write(entries)
                    entries = []
                if isinstance(item, _Forget):
                    self._forget(item)
            if entries:
                self._write(entries)
            if any(item is _STOP for item in batch):
                if self._conn is not None:
                    self._conn.close()
                return

    def _write(self, entries: list[dict[str, Any]]) -> None:
        rows = [
            (
                e["timestamp"],
                e["command"],
                e.get("user"),
                e["agentName"],
                e["topicDigest"],
                e["result"],
                e["errorCode"],
                e["durationMs"],
                e.get("redacted"),
            )
            for e in entries
        ]
        try:
            if self._conn is None or self._conn.broken or self._conn.closed:
                self._conn = connect(self._url)
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(self._insert, rows)
        except Exception as exc:  # best effort, as the file: see the module docstring
            self.dropped += len(rows)
            now = time.monotonic()
            if now - self._warned_at >= WARN_EVERY_SEC:
                self._warned_at = now
                log.warning("audit entries not written (%s); %d dropped so far", exc, self.dropped)

    def forget(self, keys: set[ForgottenKey]) -> None:
        """Scrub the forgotten memory's lines, after the entries queued before; waits up to
        FORGET_WAIT_SEC (a database that does not answer leaves them, and the forget goes on)."""
        if keys:
            request = _Forget(keys)
            self._queue.put(request)
            request.done.wait(FORGET_WAIT_SEC)

    def _forget(self, request: _Forget) -> None:
        rows = [(FORGOTTEN, list(STAGING_COMMANDS), digest, agent) for digest, agent in request.keys if digest]
        try:
            if self._conn is None or self._conn.broken or self._conn.closed:
                self._conn = connect(self._url)
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.executemany(self._scrub, rows)
        except Exception as exc:  # best effort, as every audit write; the memory is forgotten all the same
            log.warning("audit entries not scrubbed (%s)", exc)
        finally:
            request.done.set()

    def tail(self, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` entries, newest first, in the file's shape (over a connection of its
        own: the writer thread holds the other). Entries still queued are not in it yet."""
        with connect(self._url) as conn, conn.cursor() as cur:
            cur.execute(self._tail, (limit,))
            rows = cur.fetchall()
        entries = []
        for at, command, user, agent, digest_, result, code, ms in rows:
            entry = {
                "timestamp": at,
                "command": command,
                "agentName": agent,
                "topicDigest": digest_,
                "result": result,
                "errorCode": code,
                "durationMs": float(ms),
            }
            if user is not None:
                entry["user"] = user
            entries.append(entry)
        return entries

    def close(self) -> None:
        self._queue.put(_STOP)
        self._thread.join(CLOSE_WAIT_SEC)
