"""listMemories' and forgetMemory's filter as SQL, the same for SQLite and Postgres.

Pages are keyset pages over (staged_at, memory_id): the cursor is the last row's key, so a
memory staged while a client pages lands before the first page (newest first) or after the
last (oldest first) and never shifts or repeats a row of the pages between. Indexes on
(staged_at, memory_id), (status, staged_at, memory_id) and (agent_name, staged_at, memory_id)
answer a page without reading the table (see the stores' schemas).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from graph.core.contract import ErrorCode, FlowbabyError, MemoryFilter

NEWEST_ONLY = "NOT EXISTS (SELECT 1 FROM memories n WHERE n.topic_id = m.topic_id AND n.version > m.version)"
PREFIX_END = "\U0010ffff"
"""Sorts after every character that can follow a prefix (code point order: SQLite's BINARY, Postgres' "C")."""
TEXT_COLUMNS = ("topic", "context", "decisions", "rationale", "open_questions", "next_steps", "refs")


@dataclass(frozen=True)
class Page:
    """Where a page starts and how long it is."""

    limit: int
    newest_first: bool = True
    after: tuple[str, str] | None = None
    """The previous page's last (staged_at, memory_id)."""


def encode_cursor(staged_at: str, memory_id: str) -> str:
    raw = json.dumps([staged_at, memory_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """The key a cursor holds, or INVALID_PAYLOAD naming `cursor`."""
    try:
        staged_at, memory_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(staged_at, str) and isinstance(memory_id, str):
            return staged_at, memory_id
    except (ValueError, TypeError):
        pass
    raise FlowbabyError(
        ErrorCode.INVALID_PAYLOAD, 'Field "cursor" is not a cursor this service gave out', fields=["cursor"]
    )


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def where_clause(query: MemoryFilter, mark: str, *, postgres: bool) -> tuple[str, list[Any]]:
    """`WHERE ...` over table alias m (empty when nothing filters), and its arguments in order."""
    conditions: list[str] = []
    args: list[Any] = []
    if not query.allVersions:  # each topic's newest version (the UNIQUE (topic_id, version) index answers it)
        conditions.append(NEWEST_ONLY)
    if query.status:
        conditions.append(f"m.status IN ({','.join([mark] * len(query.status))})")
        args.extend(status.value for status in query.status)
    if query.topicIdPrefix:  # a byte-order range the topic index answers, then the exact test
        column = 'm.topic_id COLLATE "C"' if postgres else "m.topic_id"
        conditions.append(f"{column} >= {mark} AND {column} < {mark} AND substr(m.topic_id, 1, {mark}) = {mark}")
        prefix = query.topicIdPrefix
        args.extend([prefix, prefix + PREFIX_END, len(prefix), prefix])
    if query.agentName:
        conditions.append(f"m.agent_name = {mark}")
        args.append(query.agentName)
    for column, bound, op in (
        ("created_at", query.createdAfter, ">="),
        ("created_at", query.createdBefore, "<"),
        ("updated_at", query.updatedAfter, ">="),
        ("updated_at", query.updatedBefore, "<"),
    ):
        if bound is not None:
            conditions.append(f"m.{column} {op} {mark}")
            args.append(bound)
    if query.text:
        body = " || ' ' || ".join(f"m.{c}" for c in TEXT_COLUMNS)
        like = "ILIKE" if postgres else "LIKE"  # SQLite's LIKE ignores case (ASCII)
        conditions.append(f"({body}) {like} {mark} ESCAPE '\\'")
        args.append(f"%{_escape_like(query.text)}%")
    return (" WHERE " + " AND ".join(conditions)) if conditions else "", args


def page_sql(query: MemoryFilter, page: Page, mark: str, *, postgres: bool) -> tuple[str, list[Any]]:
    """One page of matching versions, in order, with one row more than the page (is there a next page?)."""
    where, args = where_clause(query, mark, postgres=postgres)
    if page.after is not None:
        op = "<" if page.newest_first else ">"
        keyset = f"(m.staged_at, m.memory_id) {op} ({mark}, {mark})"  # a row value: one index range
        where = f"{where} AND {keyset}" if where else f" WHERE {keyset}"
        args.extend(page.after)
    direction = "DESC" if page.newest_first else "ASC"
    args.append(page.limit + 1)
    return (
        f"SELECT m.* FROM memories m{where} ORDER BY m.staged_at {direction}, m.memory_id {direction} LIMIT {mark}",
        args,
    )


def topics_sql(query: MemoryFilter, mark: str, *, postgres: bool) -> tuple[str, list[Any]]:
    """The distinct topics with a matching version (forgetMemory by filter)."""
    where, args = where_clause(query, mark, postgres=postgres)
    return f"SELECT DISTINCT m.topic_id FROM memories m{where} ORDER BY m.topic_id", args


LIST_INDEXES = (
    "CREATE INDEX IF NOT EXISTS memories_page ON memories (staged_at, memory_id)",
    "CREATE INDEX IF NOT EXISTS memories_status_page ON memories (status, staged_at, memory_id)",
    "CREATE INDEX IF NOT EXISTS memories_agent_page ON memories (agent_name, staged_at, memory_id)",
)
"""What listMemories' pages need, on both backends. Date ranges and text have no index of their
own: they are checked along the page order's index (a date index made a wide range slower: it
fetched and sorted every row in the range)."""
