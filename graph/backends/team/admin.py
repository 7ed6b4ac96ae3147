"""The team server's own schema, `flowbaby_admin`: per-user API tokens (graph.core.api_tokens).

Its migrations are versioned SQL like a namespace's (graph.backends.team.schema), recorded in
`flowbaby_admin.admin_migrations` and applied under the same database-wide advisory lock, so
servers and `flowbaby tokens` starting together migrate once. `admin` is a reserved namespace
name, so no namespace's schema can be this one.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from graph.backends.team.schema import MIGRATION_LOCK, connect
from graph.core.api_tokens import TokenRecord

SCHEMA = "flowbaby_admin"

ADMIN_MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "per-user API tokens",
        """
        CREATE TABLE flowbaby_admin.tokens (
            token_id TEXT PRIMARY KEY,
            user_name TEXT NOT NULL,
            namespaces TEXT[] NOT NULL,
            token_hash BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            created_by TEXT NOT NULL,
            revoked_at TIMESTAMPTZ
        );
        CREATE INDEX tokens_user ON flowbaby_admin.tokens (user_name);
        """,
    ),
]
"""(version, name, SQL) in order. Append only."""


def migrate_admin(conn: psycopg.Connection[Any]) -> list[int]:
    """Bring flowbaby_admin to the newest version; returns the versions applied here."""
    applied: list[int] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}".encode())
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.admin_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_by TEXT NOT NULL)".encode()
        )
        done = {row["version"] for row in conn.execute(f"SELECT version FROM {SCHEMA}.admin_migrations".encode())}
        for version, name, statements in ADMIN_MIGRATIONS:
            if version in done:
                continue
            with conn.transaction():
                conn.execute(statements.encode())
                conn.execute(
                    f"INSERT INTO {SCHEMA}.admin_migrations (version, name, applied_by) VALUES (%s, %s, %s)".encode(),
                    (version, name, _who()),
                )
            applied.append(version)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied


def _who() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def _record(row: dict[str, Any]) -> TokenRecord:
    return TokenRecord(
        token_id=row["token_id"],
        user=row["user_name"],
        namespaces=tuple(row["namespaces"]),
        created_at=row["created_at"].isoformat(timespec="seconds"),
        revoked_at=row["revoked_at"].isoformat(timespec="seconds") if row["revoked_at"] else None,
        token_hash=bytes(row["token_hash"]),
    )


class PostgresTokenStore:
    """Tokens over one connection (under a lock; reopened once if the server dropped it)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._lock = threading.Lock()
        self._conn = connect(url)
        try:
            self.migrated = migrate_admin(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def _execute(self, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            if self._conn.broken or self._conn.closed:
                self._conn = connect(self._url)
            cur = self._conn.execute(query.encode(), params)
            return cur.fetchall() if cur.description else []

    def create(self, user: str, namespaces: Sequence[str], token_id: str, token_hash: bytes) -> TokenRecord:
        rows = self._execute(
            f"INSERT INTO {SCHEMA}.tokens (token_id, user_name, namespaces, token_hash, created_by) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING *",
            (token_id, user, list(namespaces), token_hash, _who()),
        )
        return _record(rows[0])

    def find(self, token_id: str) -> TokenRecord | None:
        rows = self._execute(f"SELECT * FROM {SCHEMA}.tokens WHERE token_id = %s", (token_id,))
        return _record(rows[0]) if rows else None

    def records(self) -> list[TokenRecord]:
        return [_record(row) for row in self._execute(f"SELECT * FROM {SCHEMA}.tokens ORDER BY created_at, token_id")]

    def revoke(self, *, token_id: str | None = None, user: str | None = None) -> list[str]:
        """Revoke one token, or every live token of a user; returns the ids revoked now."""
        column, value = ("token_id", token_id) if token_id is not None else ("user_name", user)
        rows = self._execute(
            f"UPDATE {SCHEMA}.tokens SET revoked_at = now() WHERE {column} = %s AND revoked_at IS NULL "
            "RETURNING token_id",
            (value,),
        )
        return sorted(row["token_id"] for row in rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
