"""The log of reconcile decisions (`.flowbaby/reconcile.jsonl`): what each automatic decision
changed, with its evidence, so that getMemory and the browser can show it and `restore` can undo it.

One JSON object a line, appended: a decision (`id`, `at`, `decision`, `decidedBy`, `reason`,
`newer` {topicId, memoryId}, `superseded` [{topicId, memoryId}], `evidence`, `suggestions`), or an
undo (`id`, `restoredAt`), each with the `folder` it was written in (its real path) and its `seal`:
HMAC-SHA256 under this user's seal key (graph.core.seal) of the line and this workspace folder. The
file may come from a cloned repository: a line without this folder's seal, or that does not parse as
one of these, is skipped (neither shown nor undone), and restore only ever touches memories its own
store holds. `flowbaby adopt`, after a move or copy, seals again for the new folder each line whose seal
holds for the folder it names: only this user's flowbaby could have written those.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from graph.core.contract import utc_now
from graph.core.files import write_atomic
from graph.core.seal import sealer
from graph.core.workspace import PRIVATE_FILE_MODE

log = logging.getLogger("flowbaby.reconcile")


class Ref(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    topicId: str
    memoryId: str
    status: str = "Active"
    """Its status before the decision (what restore gives back)."""


class Entry(BaseModel):
    """One decision as logged (unknown keys ignored, strings never coerced)."""

    model_config = ConfigDict(extra="ignore", strict=True)
    id: str
    at: str
    decision: str
    decidedBy: str
    reason: str = ""
    newer: Ref
    superseded: list[Ref] = []
    evidence: dict[str, Any] | None = None
    suggestions: list[dict[str, Any]] = []
    continues: str | None = None
    """A late update's: the topic the new memory would have joined (its versions count as the new topic's)."""
    restoredAt: str | None = None

    def shown(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


PURPOSE = "reconcile-decision"
LOG_FILE = "reconcile.jsonl"
"""Its name in the workspace's `.flowbaby/`."""
_ID = re.compile(r'"id":\s*"(rc_[0-9a-f]{16})"')


def _canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


class DecisionLog:
    """Appends decisions, each line sealed for `folder` (the workspace); reads back the sealed ones whole
    (kept until the file changes)."""

    def __init__(self, path: Path, folder: Path | None = None) -> None:
        self.path = path
        self.folder = folder or path.parent
        self._seal: Callable[[bytes], str] | None = None
        self._lock = threading.Lock()
        self._cache: tuple[tuple[int, int], dict[str, Entry]] | None = None
        self._continues: tuple[dict[str, Entry], dict[str, list[Entry]]] | None = None
        self._replaced: tuple[dict[str, Entry], dict[str, list[str]]] | None = None

    def _sealed(self, record: dict[str, Any]) -> str:
        if self._seal is None:
            self._seal = sealer(PURPOSE, self.folder)
        return self._seal(_canonical(record))

    def _here(self) -> str | None:
        """This folder's real path as a line records it (None: a name JSON cannot carry as it is)."""
        where = str(self.folder.resolve())
        try:
            where.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return where

    def _line(self, record: dict[str, Any], here: str | None) -> bytes:
        """A record as its line: naming this folder (when JSON can carry its name) and sealed for it."""
        record = {k: v for k, v in record.items() if k not in ("folder", "seal")} | ({"folder": here} if here else {})
        record["seal"] = self._sealed(record)
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")

    def _append(self, record: dict[str, Any]) -> None:
        line = self._line(record, self._here())
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def add(self, entry: dict[str, Any]) -> Entry:
        """Log a decision; its id and time are given here."""
        record = Entry.model_validate({"id": "rc_" + uuid.uuid4().hex[:16], "at": utc_now(), **entry})
        self._append(record.model_dump(mode="json", exclude={"restoredAt"}))
        return record

    def restored(self, entry_id: str) -> str:
        at = utc_now()
        self._append({"id": entry_id, "restoredAt": at})
        return at

    def entries(self) -> dict[str, Entry]:
        """Every decision by id, oldest first, with its undo time when it was undone."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return {}
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        found: dict[str, Entry] = {}
        with open(self.path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    data = json.loads(line)
                    seal = data.pop("seal", None) if isinstance(data, dict) else None
                    if not isinstance(seal, str) or not hmac.compare_digest(seal, self._sealed(data)):
                        continue  # not written here by this user (a cloned repository's, another folder's)
                    if isinstance(data, dict) and "restoredAt" in data and "decision" not in data:
                        if isinstance(data.get("id"), str) and data["id"] in found:
                            found[data["id"]].restoredAt = str(data["restoredAt"])
                        continue
                    entry = Entry.model_validate(data)
                except (ValueError, ValidationError):
                    continue
                found[entry.id] = entry
        with self._lock:
            self._cache = (key, found)
        return found

    def continued(self, topic_id: str) -> list[str]:
        """The topics a topic continues (late updates not undone), oldest first."""
        entries = self.entries()
        with self._lock:
            if self._continues is None or self._continues[0] is not entries:
                joined: dict[str, list[Entry]] = {}
                for entry in entries.values():
                    if entry.continues:
                        joined.setdefault(entry.newer.topicId, []).append(entry)
                self._continues = (entries, joined)
            found = self._continues[1].get(topic_id, [])
        return [e.continues for e in found if e.continues and e.restoredAt is None]

    def replaced_by(self) -> dict[str, list[str]]:
        """Older memoryId -> the memoryIds that replaced it by a decision not undone (a skipped repeat:
        the memory it repeats), for retrieval to rank the current one first (graph.search.retrieval)."""
        entries = self.entries()
        with self._lock:
            if self._replaced is not None and self._replaced[0] is entries:
                return self._replaced[1]
        links: dict[str, list[str]] = {}
        for entry in entries.values():
            if entry.restoredAt is not None:
                continue
            if entry.decision == "replace":
                for ref in entry.superseded:
                    links.setdefault(ref.memoryId, []).append(entry.newer.memoryId)
            elif entry.decision == "skip" and isinstance((entry.evidence or {}).get("memoryId"), str):
                links.setdefault(entry.newer.memoryId, []).append(str((entry.evidence or {})["memoryId"]))
        with self._lock:
            self._replaced = (entries, links)
        return links

    def _lines(self) -> list[bytes]:
        """The file's lines as they are (none when there is no file); the caller holds the lock."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return []
        with os.fdopen(fd, "rb") as handle:
            return handle.read().splitlines(keepends=True)

    def forget(self, topic_ids: set[str], memory_ids: set[str]) -> int:
        """Drop every line that names a forgotten topic or version (a decision's evidence holds its topic
        and a sentence of the new memory), and the undo lines of those decisions: rewritten through a
        0600 copy beside it; the lines kept are kept byte for byte, so their seals hold. Lines dropped."""
        marks = [json.dumps(t, ensure_ascii=False) for t in topic_ids] + sorted(memory_ids)
        with self._lock:
            lines = self._lines()
            dropped: set[str] = set()
            kept: list[bytes] = []
            for line in lines:
                text = line.decode("utf-8", "replace")
                found = _ID.search(text)
                if any(mark in text for mark in marks) or (found and found.group(1) in dropped):
                    if found:
                        dropped.add(found.group(1))
                    continue
                kept.append(line)
            if len(kept) < len(lines):
                write_atomic(self.path, b"".join(kept), mode=PRIVATE_FILE_MODE)
                self._cache = None
            return len(lines) - len(kept)

    def adopt(self) -> int:
        """`flowbaby adopt` after the workspace was moved or copied here: each line sealed, under this
        user's key, for the folder it names (`folder`) is sealed again for this one (and names it); every
        other line is kept byte for byte (one sealed here, or that no seal of the user's holds: still
        skipped). Rewritten through a 0600 copy beside it; the lines sealed again."""
        here = self._here()
        sealers: dict[str, Callable[[bytes], str]] = {}
        with self._lock:
            lines = self._lines()
            out, moved = [], 0
            for line in lines:
                record = _moved_line(line, here, sealers)
                if record is None:
                    out.append(line)
                    continue
                out.append(self._line(record, here))
                moved += 1
            if moved:
                write_atomic(self.path, b"".join(out), mode=PRIVATE_FILE_MODE)
                self._cache = None
            return moved

    def for_topic(self, topic_id: str) -> list[Entry]:
        """Decisions whose new memory or a superseded one is of this topic."""
        return [
            e
            for e in self.entries().values()
            if e.newer.topicId == topic_id or any(ref.topicId == topic_id for ref in e.superseded)
        ]


def _moved_line(line: bytes, here: str | None, sealers: dict[str, Callable[[bytes], str]]) -> dict[str, Any] | None:
    """The line's record when it was sealed, by this user, for another folder than `here` (the folder it
    names); None otherwise."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    folder, seal = data.get("folder"), data.get("seal")
    if not isinstance(folder, str) or not isinstance(seal, str) or folder == here or not Path(folder).is_absolute():
        return None
    if folder not in sealers:
        sealers[folder] = sealer(PURPOSE, Path(folder), resolve=False)
    content = {k: v for k, v in data.items() if k != "seal"}
    return data if hmac.compare_digest(seal, sealers[folder](_canonical(content))) else None
