"""The embedded backend's log of reconcile decisions (graph.backends.decision_log), the workspace's
`.flowbaby/reconcile.jsonl`: one JSON object a line, appended, each with the `folder` it was written in
(its real path) and its `seal`: HMAC-SHA256 under this user's seal key (graph.core.seal) of the line and
this workspace folder. The file may come from a cloned repository: a line without this folder's seal, or
that does not parse as a record, is skipped (neither shown nor undone), and restore only ever touches
memories its own store holds. `flowbaby adopt`, after a move or copy, seals again for the new folder each
line whose seal holds for the folder it names: only this user's flowbaby could have written those.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from graph.backends.decision_log import DecisionLog, Entry, fold, forgotten_marks
from graph.core.files import write_atomic
from graph.core.seal import sealer
from graph.core.workspace import PRIVATE_FILE_MODE

PURPOSE = "reconcile-decision"
LOG_FILE = "reconcile.jsonl"
"""Its name in the workspace's `.flowbaby/`."""
_ID = re.compile(r'"id":\s*"(rc_[0-9a-f]{16})"')


def _canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


class FileDecisionLog(DecisionLog):
    """Appends decisions, each line sealed for `folder` (the workspace); reads back the sealed ones whole
    (kept until the file changes)."""

    def __init__(self, path: Path, folder: Path | None = None) -> None:
        super().__init__()
        self.path = path
        self.folder = folder or path.parent
        self._seal: Callable[[bytes], str] | None = None
        self._cache: tuple[tuple[int, int], dict[str, Entry]] | None = None

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

    def entries(self) -> dict[str, Entry]:
        """Every decision of a line sealed here, by id, oldest first, with its undo time when it was undone."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return {}
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        with open(self.path, encoding="utf-8", errors="replace") as lines:
            found = fold(self._sealed_records(lines))
        with self._lock:
            self._cache = (key, found)
        return found

    def _sealed_records(self, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
        """The records of the lines sealed here by this user (not a cloned repository's, another folder's)."""
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            seal = data.pop("seal", None) if isinstance(data, dict) else None
            if isinstance(seal, str) and hmac.compare_digest(seal, self._sealed(data)):
                yield data

    def _lines(self) -> list[bytes]:
        """The file's lines as they are (none when there is no file); the caller holds the lock."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return []
        with os.fdopen(fd, "rb") as handle:
            return handle.read().splitlines(keepends=True)

    def forget(self, topic_ids: set[str], memory_ids: set[str]) -> int:
        """Rewritten through a 0600 copy beside it; the lines kept are kept byte for byte, so their seals hold."""
        marks = forgotten_marks(topic_ids, memory_ids)
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

    def close(self) -> None:
        """Nothing is held open between calls."""

    def adopt(self) -> int:
        """After the workspace was moved or copied here: each line sealed, under this user's key, for the
        folder it names (`folder`) is sealed again for this one (and names it); every other line is kept
        byte for byte (one sealed here, or that no seal of the user's holds: still skipped). Rewritten
        through a 0600 copy beside it; the lines sealed again."""
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
