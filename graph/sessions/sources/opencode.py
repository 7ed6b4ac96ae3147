"""OpenCode's SQLite database, read-only: 1.x `session`/`message`/`part` and 2.x
`session_v2`/`session_message`, whichever tables hold rows.

The file is opened with a `mode=ro` URI and a busy timeout: in WAL mode a reader never blocks
OpenCode's writer, and nothing here can write to it.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.sessions.chunking import short_input
from graph.sessions.model import Batch, Block, Message, Role, SessionInfo, SourceError, within

BUSY_TIMEOUT_MS = 2000


def default_folder() -> Path:
    return Environment.read().data_home / "opencode"


class OpenCodeSource:
    name = "opencode"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []

    def databases(self) -> list[Path]:
        """opencode.db and any other release channel's opencode*.db in the folder."""
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("opencode*.db") if p.is_file())

    @contextmanager
    def _open(self, path: Path) -> Iterator[sqlite3.Connection]:
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        try:
            db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        except sqlite3.Error as exc:
            raise SourceError(f"OpenCode database {path} cannot be opened: {exc}") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            yield db
        except sqlite3.Error as exc:
            raise SourceError(f"OpenCode database {path} cannot be read: {exc}") from None
        finally:
            db.close()

    @staticmethod
    def _tables(db: sqlite3.Connection) -> dict[str, set[str]]:
        """Columns of the tables this adapter reads (not of every table OpenCode keeps)."""
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        wanted = [n for n in names if n in {"session", "session_v2", "message", "part", "session_message"}]
        return {name: {c[1] for c in db.execute(f"PRAGMA table_info(`{name}`)")} for name in wanted}

    @staticmethod
    def _has_rows(db: sqlite3.Connection, table: str) -> bool:
        return db.execute(f"SELECT 1 FROM `{table}` LIMIT 1").fetchone() is not None

    def _layout(self, db: sqlite3.Connection, path: Path) -> tuple[str, str, set[str]]:
        """(session table, message layout, the session table's columns): 'v2' reads session_message,
        'v1' message+part."""
        tables = self._tables(db)
        session = "session_v2" if "session_v2" in tables and self._has_rows(db, "session_v2") else "session"
        if session not in tables or not {"id", "directory"} <= tables[session]:
            raise SourceError(f"OpenCode database {path} has an unknown schema (no session table)")
        if "session_message" in tables and self._has_rows(db, "session_message"):
            return session, "v2", tables[session]
        if {"message", "part"} <= set(tables):
            return session, "v1", tables[session]
        if "session_message" in tables:
            return session, "v2", tables[session]
        raise SourceError(f"OpenCode database {path} has an unknown schema (no message tables)")

    def sessions(self, workspace: str) -> list[SessionInfo]:
        found: list[SessionInfo] = []
        self.problems = []
        for path in self.databases():
            try:
                found.extend(self._sessions(path, workspace))
            except SourceError as exc:  # one unreadable release channel does not hide the others
                self.problems.append(str(exc))
        return found

    def _sessions(self, path: Path, workspace: str) -> list[SessionInfo]:
        found: list[SessionInfo] = []
        with self._open(path) as db:
            table, layout, columns = self._layout(db, path)

            picked = [
                f"`{name}`" if name in columns else default
                for name, default in (("title", "''"), ("time_updated", "0"), ("parent_id", "NULL"))
                + (("time_archived", "NULL"),)
            ]
            rows = db.execute(
                f"SELECT id, directory, {', '.join(picked)} FROM `{table}` "
                "WHERE directory = ? OR directory LIKE ? ESCAPE '\\'",
                (workspace, _like_prefix(workspace)),
            ).fetchall()
            counts = self._counts(db, layout, [r[0] for r in rows])
            for sid, directory, title, updated, parent, archived in rows:
                if not within(directory, workspace):
                    continue
                count, last_change = counts.get(sid, (0, 0))
                found.append(
                    SessionInfo(
                        source=self.name,
                        session_id=sid,
                        title=title or "",
                        directory=directory,
                        updated_ms=int(updated or 0),
                        message_count=count,
                        top_level=parent is None,
                        archived=archived is not None,
                        fingerprint=f"{path.name}:{layout}:{updated}:{count}:{last_change}",
                    )
                )
        return found

    @staticmethod
    def _counts(db: sqlite3.Connection, layout: str, ids: list[str]) -> dict[str, tuple[int, int]]:
        """Per session: messages, and the newest change marker (max time_updated or seq)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        if layout == "v2":
            sql = (
                "SELECT session_id, count(*), max(max(seq), max(time_updated)) FROM session_message "
                f"WHERE session_id IN ({marks}) GROUP BY session_id"
            )
        else:
            sql = (
                "SELECT session_id, count(*), max(time_updated) FROM message "
                f"WHERE session_id IN ({marks}) GROUP BY session_id"
            )
        return {sid: (count, int(mark or 0)) for sid, count, mark in db.execute(sql, ids)}

    def _path_of(self, session: SessionInfo) -> Path:
        name = session.fingerprint.split(":", 1)[0]
        path = self.folder / name
        if not path.is_file():
            raise SourceError(f"OpenCode database {path} is gone")
        return path

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        path = self._path_of(session)
        with self._open(path) as db:
            _, layout, _ = self._layout(db, path)
            if layout == "v2":
                return self._read_v2(db, session.session_id, watermark)
            return self._read_v1(db, session.session_id, watermark)

    def _read_v1(self, db: sqlite3.Connection, sid: str, watermark: dict[str, Any] | None) -> Batch:
        since = int((watermark or {}).get("time", -1))
        if since < 0:
            rows = db.execute(
                "SELECT id, time_created, time_updated, data FROM message WHERE session_id = ? "
                "ORDER BY time_created, id",
                (sid,),
            ).fetchall()
        else:
            rows = db.execute(
                "SELECT id, time_created, time_updated, data FROM message WHERE session_id = ? AND (time_updated >= ? "
                "OR id IN (SELECT message_id FROM part WHERE session_id = ? AND time_updated >= ?)) "
                "ORDER BY time_created, id",
                (sid, since, sid, since),
            ).fetchall()
        newest = since
        messages: dict[str, Message] = {}
        for mid, created, updated, data in rows:
            info = _json(data)
            role: Role = "user" if info.get("role") == "user" else "assistant"
            messages[mid] = Message(mid, role, int(created), int(created))
            newest = max(newest, int(updated))
        if messages:
            ids = list(messages)
            for start in range(0, len(ids), 500):
                part_ids = ids[start : start + 500]
                marks = ",".join("?" * len(part_ids))
                for mid, updated, data in db.execute(
                    f"SELECT message_id, time_updated, data FROM part WHERE message_id IN ({marks}) "
                    "ORDER BY message_id, id",
                    part_ids,
                ):
                    messages[mid].blocks.extend(_v1_blocks(_json(data)))
                    newest = max(newest, int(updated))
        return Batch(list(messages.values()), {"time": newest}, full=since < 0)

    def _read_v2(self, db: sqlite3.Connection, sid: str, watermark: dict[str, Any] | None) -> Batch:
        mark = watermark or {}
        seq, since = int(mark.get("seq", -1)), int(mark.get("time", -1))
        rows = db.execute(
            "SELECT id, type, seq, time_created, time_updated, data FROM session_message "
            "WHERE session_id = ? AND (seq > ? OR time_updated >= ?) ORDER BY seq",
            (sid, seq, since if since >= 0 else -1),
        ).fetchall()
        messages = []
        for mid, kind, number, created, updated, data in rows:
            seq, since = max(seq, int(number)), max(since, int(updated or 0))
            message = _v2_message(mid, kind, int(number), int(created or 0), _json(data))
            if message is not None:
                messages.append(message)
        return Batch(messages, {"seq": seq, "time": since}, full=not watermark)


def _like_prefix(workspace: str) -> str:
    escaped = workspace.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


def _json(data: Any) -> dict[str, Any]:
    try:
        value = json.loads(data) if isinstance(data, (str, bytes)) else data
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    """Tool output as text: strings as they are, content arrays by their text items."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _v1_blocks(part: dict[str, Any]) -> list[Block]:
    kind = part.get("type")
    if kind == "text" and not part.get("synthetic"):
        return [Block("text", _text(part.get("text")))]
    if kind == "reasoning":
        return [Block("reasoning", _text(part.get("text")))]
    if kind == "tool":
        tool = str(part.get("tool") or "tool")
        state = part.get("state") or {}
        blocks = [Block("tool_call", short_input(state.get("input"), tool), tool)]
        output = state.get("output") if state.get("status") == "completed" else state.get("error")
        if output:
            blocks.append(Block("tool_result", _text(output), tool))
        return blocks
    return []  # step-start, step-finish, snapshot, patch, file, agent...


def _v2_message(mid: str, kind: str, seq: int, created: int, data: dict[str, Any]) -> Message | None:
    if kind in ("user", "synthetic", "system"):
        role: Role = "user" if kind == "user" else "system"
        return Message(mid, role, seq, created, [Block("text", _text(data.get("text")))])
    if kind == "shell":
        command = str(data.get("command") or "")
        shell = [Block("tool_call", command[:300], "shell"), Block("tool_result", _text(data.get("output")), "shell")]
        return Message(mid, "tool", seq, created, shell)
    if kind == "compaction":
        return Message(mid, "system", seq, created, [Block("text", _text(data.get("summary")))])
    if kind == "assistant":
        blocks: list[Block] = []
        for item in data.get("content") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "text":
                blocks.append(Block("text", _text(item.get("text"))))
            elif item.get("type") == "reasoning":
                blocks.append(Block("reasoning", _text(item.get("text"))))
            elif item.get("type") == "tool":
                tool = str(item.get("name") or "tool")
                state = item.get("state") or {}
                blocks.append(Block("tool_call", short_input(state.get("input"), tool), tool))
                if state.get("status") in ("completed", "error") and state.get("content"):
                    blocks.append(Block("tool_result", _text(state.get("content")), tool))
        return Message(mid, "assistant", seq, created, blocks)
    return None  # agent-switched, model-switched...
