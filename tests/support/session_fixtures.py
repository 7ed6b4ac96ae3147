"""Hand-built session stores in the clients' own layouts, for the session-memory tests.

The 1.x tables are the DDL that opencode-ai 1.18.33 writes (read from a database it created);
`session_message` is the 2.x table from the same release's migration (id, session_id, type,
seq, time_created, time_updated, data), with message data in its `Session.Message` shapes;
`session_v2` mirrors `session`. Claude Code transcripts use the record shape 2.1.332 writes."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

SESSION_COLUMNS = """(
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text, `slug` text NOT NULL,
  `directory` text NOT NULL, `path` text, `title` text NOT NULL, `version` text NOT NULL, `share_url` text,
  `summary_additions` integer, `summary_deletions` integer, `summary_files` integer, `summary_diffs` text,
  `metadata` text, `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `agent` text, `model` text, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer)"""
V1 = f"""
CREATE TABLE `session` {SESSION_COLUMNS};
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `seq` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
"""
V2 = V1 + f"CREATE TABLE `session_v2` {SESSION_COLUMNS};"
T0 = 1_790_000_000_000


class OpenCodeDb:
    """An opencode.db written the way OpenCode writes it (WAL), one connection kept open like OpenCode's."""

    def __init__(self, folder: Path, version: int = 1) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "opencode.db"
        self.version = version
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(V2 if version == 2 else V1)
        self.clock = T0
        self.seq: dict[str, int] = {}

    def tick(self) -> int:
        self.clock += 1000
        return self.clock

    def session(self, sid: str, directory: Path | str, title: str = "A session", **extra: Any) -> str:
        table = "session_v2" if self.version == 2 else "session"
        now = self.tick()
        self.db.execute(
            f"INSERT INTO {table} (id, project_id, slug, directory, title, version, time_created, time_updated, "
            "parent_id, time_archived) VALUES (?, 'global', 'slug', ?, ?, '1.18.33', ?, ?, ?, ?)",
            (sid, str(directory), title, now, now, extra.get("parent_id"), extra.get("time_archived")),
        )
        return sid

    def _touch(self, sid: str, now: int) -> None:
        table = "session_v2" if self.version == 2 else "session"
        self.db.execute(f"UPDATE {table} SET time_updated = ? WHERE id = ?", (now, sid))

    def turn(self, sid: str, role: str, *parts: dict[str, Any]) -> str:
        """A message with parts in 1.x shapes ({"type": "text", "text": ...}, tool parts...)."""
        now = self.tick()
        mid = f"msg_{uuid.uuid4().hex[:20]}"
        if self.version == 2:
            self.seq[sid] = self.seq.get(sid, 0) + 1
            kind, data = _v2(role, parts)
            self.db.execute(
                "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
                (mid, sid, kind, self.seq[sid], now, now, json.dumps(data)),
            )
        else:
            info = {"role": role, "time": {"created": now}}
            self.db.execute("BEGIN")
            self.db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, now, now, json.dumps(info)))
            for n, part in enumerate(parts):
                self.db.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (f"prt_{mid}_{n:03d}", mid, sid, now, now, json.dumps(part)),
                )
            self.db.execute("COMMIT")
        self._touch(sid, now)
        return mid

    def close(self) -> None:
        self.db.close()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool(name: str, command: str, output: str) -> dict[str, Any]:
    state = {"status": "completed", "input": {"command": command}, "output": output}
    return {"type": "tool", "tool": name, "callID": "call_1", "state": state}


def _v2(role: str, parts: tuple[dict[str, Any], ...]) -> tuple[str, dict[str, Any]]:
    if role == "user":
        return "user", {"text": "\n".join(p["text"] for p in parts if p["type"] == "text"), "time": {"created": 0}}
    content: list[dict[str, Any]] = []
    for n, part in enumerate(parts):
        if part["type"] == "tool":
            state = part["state"]
            content.append(
                {
                    "type": "tool",
                    "id": f"t{n}",
                    "name": part["tool"],
                    "state": {
                        "status": "completed",
                        "input": state["input"],
                        "content": [{"type": "text", "text": state["output"]}],
                        "structured": {},
                    },
                    "time": {"created": 0},
                }
            )
        else:
            content.append({"type": part["type"], "id": f"p{n}", "text": part["text"]})
    return "assistant", {"agent": "build", "content": content, "time": {"created": 0}}


class Transcript:
    """A Claude Code transcript: `<config>/projects/<cwd as dashes>/<session>.jsonl`."""

    def __init__(self, config: Path, cwd: Path | str, session_id: str | None = None) -> None:
        from graph.sessions.sources.claude_code import project_folder_name

        self.session_id = session_id or str(uuid.uuid4())
        self.cwd = str(cwd)
        self.path = config / "projects" / project_folder_name(self.cwd) / f"{self.session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.parent: str | None = None
        self.second = 0

    def _stamp(self) -> str:
        self.second += 1
        return f"2026-11-30T10:{self.second // 60:02d}:{self.second % 60:02d}.000Z"

    def record(self, kind: str, message: dict[str, Any], path: Path | None = None, **extra: Any) -> dict[str, Any]:
        record = {
            "type": kind,
            "uuid": str(uuid.uuid4()),
            "parentUuid": self.parent,
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "timestamp": self._stamp(),
            "message": message,
            **extra,
        }
        self.parent = record["uuid"]
        self.write(json.dumps(record) + "\n", path)
        return record

    def write(self, raw: str, path: Path | None = None) -> None:
        target = path or self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as handle:
            handle.write(raw)

    def user(self, value: str) -> dict[str, Any]:
        return self.record("user", {"role": "user", "content": value})

    def assistant(self, message_id: str, *blocks: dict[str, Any], path: Path | None = None) -> None:
        """One record per block, all with the same message.id, as Claude Code streams them."""
        for block in blocks:
            self.record("assistant", {"id": message_id, "role": "assistant", "content": [block]}, path)

    def tool_result(self, tool_use_id: str, output: str) -> None:
        content = [{"type": "tool_result", "tool_use_id": tool_use_id, "content": output}]
        self.record("user", {"role": "user", "content": content})

    def noise(self) -> None:
        """Records 2.1.332 writes besides the conversation; none of it is indexed."""
        self.write(
            json.dumps({"type": "api-request-blob", "sessionId": self.session_id, "system": "SYSTEM PROMPT"}) + "\n"
        )
        self.write(json.dumps({"type": "queue-operation", "operation": "enqueue", "sessionId": self.session_id}) + "\n")

    @property
    def subagents(self) -> Path:
        return self.path.with_suffix("") / "subagents"


def canary_session(folder: Path, workspace: Path) -> tuple[OpenCodeDb, dict[str, str]]:
    """An OpenCode store under `folder` with one short session in `workspace` (close it at the
    end), and the settings that make a flowbaby process read it (and only it, without watching)."""
    db = OpenCodeDb(folder)
    db.session("ses_canary", workspace, "Canary placement")
    db.turn("ses_canary", "user", text("Which region should the payments canary run in?"))
    db.turn("ses_canary", "assistant", text("Put the canary in eu-west-3: it has the lowest card-network latency."))
    return db, {
        "FLOWBABY_SESSIONS_OPENCODE_DIR": str(folder),
        "FLOWBABY_SESSIONS_CLAUDE_CODE": "0",
        "FLOWBABY_SESSIONS_WATCH": "0",
    }
