"""The team backend's connection pool, and what a request is told when the database cannot serve it.

One pool per (database, namespace) per process, shared by the memory store and the vector index
(psycopg_pool; a connection is checked at checkout, so one the server dropped is replaced rather
than failing a request). Two faults reach the fronts as codes, never as tracebacks:

- DATABASE_BUSY: every connection stayed in use for FLOWBABY_PG_POOL_TIMEOUT_SEC; the request
  waited its turn in the pool's queue and is refused with Retry-After.
- DATABASE_UNAVAILABLE: the server does not answer (stopped, restarting, unreachable). While it
  is down, requests are refused at once (a probe connection at most every PROBE_INTERVAL_SEC
  decides); the first probe that connects replaces the pool, so the process recovers by itself.

Both are FlowbabyErrors carrying retryAfterSec (HTTP 503 + Retry-After; see INGEST_CONTRACT.md 15).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.environment import Environment

log = logging.getLogger("flowbaby.postgres")
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
"""Its warning per failed reconnection attempt, every back-off step of an outage, would drown the log;
this module says once when the database stops answering and once when it is back."""

POOL_MIN_ENV = "FLOWBABY_PG_POOL_MIN"
POOL_MAX_ENV = "FLOWBABY_PG_POOL_MAX"
POOL_TIMEOUT_ENV = "FLOWBABY_PG_POOL_TIMEOUT_SEC"
DEFAULT_POOL_MIN = 1
DEFAULT_POOL_MAX = 8
"""Connections per serving process and namespace: the service
runs store and vector calls in threads, at most about 2 retrievals + the ingests + 2 graph batches
at once; 8 leaves room without taking many of a server's max_connections (100 by default)."""
DEFAULT_POOL_TIMEOUT_SEC = 10.0
"""How long a request queues for a free connection before DATABASE_BUSY."""
PROBE_INTERVAL_SEC = 0.5
"""While the database is down: at most one probe connection this often, every other request is refused at once."""
CHECK_IDLE_SEC = 1.0
"""A connection idle longer than this is checked (one empty query) before a call gets it, so that one
the server dropped meanwhile is replaced rather than failing the call; checking at every checkout
would cost every call a round trip (0.04-1.3 ms here, depending on load)."""
RETRY_AFTER_UNAVAILABLE_SEC = 5
RETRY_AFTER_BUSY_SEC = 2

ConnectionFactory = Callable[[str], "psycopg.Connection[dict[str, Any]]"]


@dataclass(frozen=True)
class PoolSettings:
    min_size: int = DEFAULT_POOL_MIN
    max_size: int = DEFAULT_POOL_MAX
    timeout_sec: float = DEFAULT_POOL_TIMEOUT_SEC

    @classmethod
    def from_env(cls) -> PoolSettings:
        """The process environment's sizes; a bad value is refused at start with the variable's name."""

        def number(name: str, default: float, low: float) -> float:
            text = Environment.read().get(name).strip()
            if not text:
                return default
            try:
                value = float(text)
            except ValueError:
                value = low - 1
            if value < low:
                raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{name} must be a number of at least {low:g}")
            return value

        low = int(number(POOL_MIN_ENV, DEFAULT_POOL_MIN, 1))
        high = int(number(POOL_MAX_ENV, max(DEFAULT_POOL_MAX, low), 1))
        if high < low:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{POOL_MAX_ENV} must be at least {POOL_MIN_ENV}")
        return cls(low, high, number(POOL_TIMEOUT_ENV, DEFAULT_POOL_TIMEOUT_SEC, 0.1))


def database_unavailable(where: str) -> FlowbabyError:
    return FlowbabyError(
        ErrorCode.DATABASE_UNAVAILABLE,
        f"The team database {where} does not answer; the request was not carried out. "
        f"Retry in {RETRY_AFTER_UNAVAILABLE_SEC}s (the server reconnects by itself when it is back)",
        retryAfterSec=RETRY_AFTER_UNAVAILABLE_SEC,
    )


def database_busy(where: str, waited: float) -> FlowbabyError:
    return FlowbabyError(
        ErrorCode.DATABASE_BUSY,
        f"Every connection to the team database {where} stayed in use for {waited:g}s; "
        f"the request was not carried out. Retry in {RETRY_AFTER_BUSY_SEC}s",
        retryAfterSec=RETRY_AFTER_BUSY_SEC,
    )


def connection_lost(conn: psycopg.Connection[Any], error: BaseException) -> bool:
    """Whether an error means the server went away (rather than a bad statement)."""
    return (
        conn.broken or conn.closed or isinstance(error, psycopg.errors.AdminShutdown | psycopg.errors.CannotConnectNow)
    )


class PgPool:
    """A psycopg_pool.ConnectionPool that answers DATABASE_BUSY / DATABASE_UNAVAILABLE and
    replaces itself when the database comes back."""

    def __init__(
        self,
        url: str,
        where: str,
        configure: Callable[[psycopg.Connection[Any]], None],
        connect: ConnectionFactory,
        settings: PoolSettings | None = None,
    ) -> None:
        self.where = where
        self.settings = settings or PoolSettings.from_env()
        self._url = url
        self._configure = configure
        self._connect = connect
        self._state = threading.Lock()
        self._down_since: float | None = None
        self._last_probe = 0.0
        self._last_used: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()
        self._pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[psycopg.Connection[dict[str, Any]]]:
        pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            self._url,
            min_size=self.settings.min_size,
            max_size=self.settings.max_size,
            timeout=self.settings.timeout_sec,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "connect_timeout": 5,
                "application_name": f"flowbaby {socket.gethostname()} pid {os.getpid()} pool",
            },
            configure=self._configure,
            open=False,
            name=f"flowbaby {self.where}",
        )
        pool.open(wait=False)
        return pool

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def close(self) -> None:
        self._pool.close(timeout=1.0)

    def _mark_down(self) -> None:
        with self._state:
            if self._down_since is None:
                self._down_since = time.monotonic()
                log.warning("the team database %s stopped answering; refusing requests until it is back", self.where)

    def _probe(self) -> None:
        """While down: refuse at once, except one caller per interval, who tries a connection;
        if it connects, the pool (all of whose connections are dead) is replaced."""
        with self._state:
            now = time.monotonic()
            if self._down_since is None:
                return
            if now - self._last_probe < PROBE_INTERVAL_SEC:
                raise database_unavailable(self.where)
            self._last_probe = now
            if not self._reachable():
                raise database_unavailable(self.where)
            old, self._pool = self._pool, self._new_pool()
            log.warning(
                "the team database %s answers again after %.1fs; connections renewed",
                self.where,
                now - self._down_since,
            )
            self._down_since = None
        # The old pool's threads may sleep in a reconnection back-off: let them stop off the request path.
        threading.Thread(target=old.close, kwargs={"timeout": 5.0}, name="flowbaby-pool-close", daemon=True).start()

    def _renew(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        """The server restarted between two calls: every connection made before is dead (each is
        replaced, not checked in turn)."""
        pool.drain()
        log.warning("the team database %s restarted; connections renewed", self.where)

    def _reachable(self) -> bool:
        try:
            self._connect(self._url).close()
        except FlowbabyError:
            return False
        return True

    def _checkout(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> psycopg.Connection[dict[str, Any]]:
        """A connection that answers (if it was idle for CHECK_IDLE_SEC). One the server dropped goes
        back broken, and the pool replaces it; if the server cannot be reached at all, it is down."""
        began = time.monotonic()
        while True:
            try:
                conn = pool.getconn(max(0.1, self.settings.timeout_sec - (time.monotonic() - began)))
            except PoolTimeout:  # waited the whole timeout: every connection busy, or none could be made
                if self._reachable():
                    raise database_busy(self.where, round(time.monotonic() - began, 1)) from None
                self._mark_down()
                raise database_unavailable(self.where) from None
            if time.monotonic() - self._last_used.get(conn, 0.0) < CHECK_IDLE_SEC:
                return conn
            try:
                conn.execute("")
                return conn
            except psycopg.OperationalError:
                pool.putconn(conn)
                if not self._reachable():
                    self._mark_down()
                    raise database_unavailable(self.where) from None
                self._renew(pool)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        """A working connection for one call; DATABASE_BUSY or DATABASE_UNAVAILABLE if there is none."""
        if self._down_since is not None:
            self._probe()
        pool = self._pool
        conn = self._checkout(pool)
        try:
            yield conn
        except psycopg.OperationalError as exc:
            if not connection_lost(conn, exc):
                raise
            if self._reachable():
                self._renew(pool)
            else:
                self._mark_down()
            raise database_unavailable(self.where) from None
        finally:
            self._last_used[conn] = time.monotonic()
            pool.putconn(conn)


_shared: dict[tuple[str, str], tuple[PgPool, int]] = {}
_shared_lock = threading.Lock()


def acquire_pool(
    url: str,
    namespace: str,
    where: str,
    configure: Callable[[psycopg.Connection[Any]], None],
    connect: ConnectionFactory,
) -> PgPool:
    """The process's pool for this database and namespace (the store and the vector index share it)."""
    with _shared_lock:
        pool, users = _shared.get((url, namespace)) or (None, 0)
        if pool is None:
            pool = PgPool(url, where, configure, connect)
        _shared[(url, namespace)] = (pool, users + 1)
        return pool


def release_pool(url: str, namespace: str) -> None:
    with _shared_lock:
        pool, users = _shared.pop((url, namespace), (None, 0))
        if pool is None:
            return
        if users > 1:
            _shared[(url, namespace)] = (pool, users - 1)
        else:
            pool.close()
