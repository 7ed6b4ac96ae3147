"""One graph build at a time per namespace, across servers (cognee on Postgres).

Two workers running cognee on one namespace's schema at once collide: both run cognee's first
alembic migration (`CREATE TABLE alembic_version` → unique violation on `pg_type`, the batch
fails with COGNIFY_FAILED), and cognee 1.6.5 gives no guarantee for two `cognify` of one dataset
at once. A session advisory lock, held by the worker around each batch, queues them; a worker
that dies frees it with its connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

BUILD_LOCK_KEY = 0x636F676E  # "cogn"; the second key is hashtext(namespace)


@asynccontextmanager
async def namespace_build_lock(url: str, namespace: str) -> AsyncIterator[float]:
    """Hold `pg_advisory_lock(BUILD_LOCK_KEY, hashtext(namespace))` on a connection of its own;
    yields the seconds spent waiting for it."""
    import psycopg

    def connect() -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(url, autocommit=True, connect_timeout=5)

    conn = await asyncio.to_thread(connect)
    try:
        started = time.perf_counter()
        await asyncio.to_thread(conn.execute, "SELECT pg_advisory_lock(%s, hashtext(%s))", (BUILD_LOCK_KEY, namespace))
        yield time.perf_counter() - started
    finally:
        await asyncio.to_thread(conn.close)  # closing the session releases the lock
