"""Retrieval throttling per namespace across every server on the team backend (graph.backends.throttle
is the one-process version): at most 2 retrievals running and 5 waiting in the namespace, and the
per-minute start budget counted over all servers.

The cheapest honest way found: the 7 admission places and the 2 running places are session advisory
locks taken with try-semantics on one connection per server (a server that dies releases its places
with its connection, so nothing leaks and nothing needs a lease), and the per-minute budget is a
small table of start times counted under a transaction advisory lock. Costs 3 round trips per
retrieval, plus one per 10 ms spent waiting for a running place.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg import sql

from graph.backends.team.pool import CHECK_IDLE_SEC, database_unavailable
from graph.backends.team.schema import connect, describe_url, migrate, schema_name
from graph.backends.throttle import MAX_RUNNING, MAX_WAITING, WINDOW_SEC, RetrievalThrottle
from graph.core.contract import ErrorCode, FlowbabyError, RetrievalError, RetrievalErrorCode

ADMIT_LOCK = 0x61646D74  # "admt": one of the namespace's MAX_RUNNING + MAX_WAITING admission places
RUN_LOCK = 0x72756E73  # "runs": one of the namespace's MAX_RUNNING running places
RATE_LOCK = 0x72617465  # "rate": counting and recording a start
WAIT_STEP_SEC = 0.01
"""How often a waiting retrieval tries for a running place held by another server."""

_TRY_PLACE = (
    "SELECT i FROM (SELECT i FROM generate_series(0, %s) AS i WHERE i <> ALL(%s) OFFSET 0) AS free "
    "WHERE pg_try_advisory_lock(%s, hashtext(%s || ':' || i)) LIMIT 1"
)
"""The first free place, locked. The fenced subquery (OFFSET 0) leaves out the places this session
holds before any lock is tried: advisory locks are re-entrant, so a held place would be taken twice."""


class SharedRetrievalThrottle(RetrievalThrottle):
    def __init__(
        self, url: str, namespace: str, per_minute: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(per_minute, clock)
        self._url, self.namespace = url, namespace
        self._lock = threading.Lock()
        self._conn = self._open()
        self._used_at = time.monotonic()
        self._held: dict[int, set[int]] = {ADMIT_LOCK: set(), RUN_LOCK: set()}

    def _open(self) -> psycopg.Connection[dict[str, Any]]:
        conn = connect(self._url)
        migrate(conn, self.namespace)  # the store did already, unless the throttle is opened alone
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(self.namespace))))
        return conn

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        """Under the lock. A dropped connection took its places with it: forget them. A database that
        does not answer is DATABASE_UNAVAILABLE, as for the store (the retrieval was not carried out)."""
        try:
            if time.monotonic() - self._used_at > CHECK_IDLE_SEC and not self._conn.broken:
                with contextlib.suppress(psycopg.OperationalError):  # a restart meanwhile: marks it broken
                    self._conn.execute("")
            if self._conn.broken or self._conn.closed:
                self._held = {ADMIT_LOCK: set(), RUN_LOCK: set()}
                self._conn = self._open()
            yield self._conn
            self._used_at = time.monotonic()
        except (psycopg.OperationalError, FlowbabyError) as exc:
            if isinstance(exc, FlowbabyError) and exc.code is not ErrorCode.FLOWBABY_ERROR:
                raise
            raise database_unavailable(describe_url(self._url)[0]) from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """This server's own bound first (decided before any await, as in one process), then the namespace's."""
        if self._admitted >= MAX_RUNNING + MAX_WAITING:
            raise self._queue_full()
        self._admitted += 1
        try:
            admission = await asyncio.to_thread(self._enter)
            running: int | None = None
            try:
                async with self._slots:
                    while (running := await asyncio.to_thread(self._take, RUN_LOCK, MAX_RUNNING)) is None:
                        await asyncio.sleep(WAIT_STEP_SEC)
                    yield
            finally:
                await asyncio.to_thread(self._release, admission, running)
        finally:
            self._admitted -= 1

    def _queue_full(self) -> RetrievalError:
        return RetrievalError(
            RetrievalErrorCode.QUEUE_FULL,
            f"429_AGENT_THROTTLED: {MAX_RUNNING} retrievals running and {MAX_WAITING} waiting; retry shortly",
            retryAfterSec=1,
        )

    def _take(self, key: int, places: int) -> int | None:
        with self._lock:
            with self._connection() as conn:
                row = conn.execute(_TRY_PLACE, (places - 1, sorted(self._held[key]), key, self.namespace)).fetchone()
            if row is None:
                return None
            self._held[key].add(int(row["i"]))
            return int(row["i"])

    def _enter(self) -> int:
        """An admission place, and a start within the per-minute budget; or the 429."""
        admission = self._take(ADMIT_LOCK, MAX_RUNNING + MAX_WAITING)
        if admission is None:
            raise self._queue_full()
        if self.per_minute is None:
            return admission
        with self._lock, self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (RATE_LOCK, self.namespace))
            row = conn.execute(
                "WITH gone AS (DELETE FROM retrieval_starts WHERE started_at < now() - make_interval(secs => %s)) "
                "SELECT COUNT(*) AS n, EXTRACT(EPOCH FROM now() - MIN(started_at))::float8 AS age "
                "FROM retrieval_starts WHERE started_at >= now() - make_interval(secs => %s)",
                (WINDOW_SEC, WINDOW_SEC),
            ).fetchone()
            assert row is not None
            if int(row["n"]) < self.per_minute:
                conn.execute("INSERT INTO retrieval_starts (started_at) VALUES (now())")
                return admission
        self._release(admission, None)
        retry_after = max(1, int(WINDOW_SEC - float(row["age"] or 0.0)) + 1)
        raise RetrievalError(
            RetrievalErrorCode.RATE_LIMIT_EXCEEDED,
            f"429_AGENT_THROTTLED: at most {self.per_minute} retrievals per minute; retry in {retry_after}s",
            retryAfterSec=retry_after,
        )

    def _release(self, admission: int, running: int | None) -> None:
        """Give the places back; on a connection the database dropped they are gone already."""
        places = [(ADMIT_LOCK, admission)] + ([(RUN_LOCK, running)] if running is not None else [])
        with self._lock:
            try:
                for key, place in places:
                    if place in self._held[key]:  # not if the connection (and the place with it) was lost
                        self._conn.execute(
                            "SELECT pg_advisory_unlock(%s, hashtext(%s || ':' || %s))", (key, self.namespace, place)
                        )
                        self._held[key].discard(place)
            except psycopg.OperationalError:
                self._held = {ADMIT_LOCK: set(), RUN_LOCK: set()}
