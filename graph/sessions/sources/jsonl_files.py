"""What the sources that keep sessions as JSONL files in the client's own folder share (Claude Code,
Codex, Gemini CLI): they read whole lines only (the client may be writing the last one), learn a
file's header (id, folder, title, turn count) once per size and mtime, name a file that cannot be read
in `problems` rather than failing the listing, and fingerprint a session by its files' size and mtime.

A session file is read only when it is a regular file whose real path lies in the client's folder (a link out
of it is not followed), at most MAX_READ_BYTES per read and MAX_LINE_BYTES per line (a longer line is passed
over): a planted file cannot make the reader take the memory of a whole disk.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from graph.core.bounded_read import open_regular
from graph.core.redaction import clean
from graph.sessions.model import Batch, Message, SessionInfo, SourceError


def ms(stamp: Any) -> int:
    """An ISO time (a trailing `Z` allowed) in epoch milliseconds; 0 when it is not one."""
    try:
        return int(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


MAX_READ_BYTES = 64 * 1024 * 1024
"""The most of one session file read at a time (64 MiB): the whole-file sources see no further; Claude Code's
reads resume there next time."""
MAX_LINE_BYTES = 8 * 1024 * 1024
"""The longest record read (8 MiB); a longer line is passed over."""


def whole_lines(path: Path, base: Path, start: int = 0) -> Iterator[tuple[int, bytes | None]]:
    """(the offset after it, the line) for each whole line of `path` from `start`, up to MAX_READ_BYTES read; a
    line longer than MAX_LINE_BYTES comes as None, and a last line without its newline (being written) not at
    all. OSError when `path` is not a regular file whose real path is inside `base`."""
    fd = open_regular(path, base)
    if fd is None:
        raise OSError(f"not a regular file inside {base}")
    with os.fdopen(fd, "rb") as handle:
        handle.seek(start)
        offset, end = start, start + MAX_READ_BYTES
        while offset < end:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line.endswith(b"\n"):
                if len(line) <= MAX_LINE_BYTES:
                    return  # the end, or a line being written
                while line and not line.endswith(b"\n") and offset < end:  # too long: pass over it
                    offset += len(line)
                    line = handle.readline(MAX_LINE_BYTES + 1)
                if not line.endswith(b"\n"):
                    return
                offset += len(line)
                yield offset, None
                continue
            offset += len(line)
            yield offset, line


def records(path: Path, base: Path) -> list[dict[str, Any]]:
    """The file's whole lines as JSON objects (a line being written, too long or not JSON is skipped)."""
    found = []
    for _, line in whole_lines(path, base):
        try:
            record = json.loads(line) if line is not None else None
        except ValueError:
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def first_user_title(messages: list[Message]) -> str:
    """A session's title from its first user text, cleaned before the cut (which could leave a secret unmatched)."""
    first = next((b.text for m in messages if m.role == "user" for b in m.blocks if b.kind == "text"), "")
    return clean(first)[0][:80]


@dataclass
class Header:
    """What a session's listing needs from its file, without the caller reading it again."""

    session_id: str
    cwd: str
    title: str
    count: int
    updated_ms: int


class JsonlSessions(ABC):
    """A source over JSONL session files, with the header cache and the error wording its kinds share."""

    name: str
    root: ClassVar[str]
    """The folder under the client's own that holds its session files; absent means no sessions yet."""
    what: ClassVar[str]
    """How a problem names one file, e.g. "Codex rollout"."""
    whole: ClassVar[str]
    """How an error names them all, e.g. "Codex sessions"."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []
        self._headers: dict[Path, tuple[tuple[int, int], Header]] = {}

    @abstractmethod
    def _list(self, root: Path, workspace: str) -> list[SessionInfo]:
        """The workspace's sessions under `root` (raising OSError when the folder cannot be walked)."""

    @abstractmethod
    def _parse_header(self, path: Path) -> Header | None:
        """The file's header, or None when it is not (yet) a session of this client."""

    def sessions(self, workspace: str) -> list[SessionInfo]:
        root = self.folder / self.root
        if not root.is_dir():
            return []
        self.problems = []
        try:
            return self._list(root, workspace)
        except OSError as exc:
            raise SourceError(f"{self.whole} under {root} cannot be read: {exc}") from None

    def _header(self, path: Path) -> Header | None:
        info = path.stat()
        key = (info.st_size, info.st_mtime_ns)
        cached = self._headers.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        header = self._parse_header(path)
        if header is not None:
            self._headers[path] = (key, header)
        return header

    def _info(self, path: Path, header: Header, directory: str, files: list[Path] | None = None) -> SessionInfo:
        """The listing of the session whose header is in `path` and whose turns are in `files` (that one alone
        by default): the newest file's mtime counts as an update, and every file's stamp is in the fingerprint."""
        stats = [f.stat() for f in files or [path]]
        return SessionInfo(
            source=self.name,
            session_id=header.session_id,
            title=header.title,
            directory=directory,
            updated_ms=max(header.updated_ms, int(max(s.st_mtime for s in stats) * 1000)),
            message_count=header.count,
            fingerprint=f"{path}|" + ";".join(f"{s.st_size}:{s.st_mtime_ns}" for s in stats),
        )

    def _with_headers(self, paths: Iterable[Path]) -> Iterator[tuple[Path, Header]]:
        """Each session file with its header; one that cannot be read is named in `problems` and passed over."""
        for path in paths:
            try:
                header = self._header(path)
            except OSError as exc:
                self.problems.append(f"{self.what} {path} cannot be read: {exc}")
                continue
            if header is not None:
                yield path, header


class WholeFileSessions(JsonlSessions):
    """A source whose session is one file, read whole each time (it is small next to the encoder's work)."""

    @staticmethod
    @abstractmethod
    def conversation(lines: list[dict[str, Any]]) -> list[Message]:
        """The session's turns, from its file's records."""

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        path = Path(session.fingerprint.split("|", 1)[0])
        try:
            messages = self.conversation(records(path, self.folder))
        except OSError as exc:
            raise SourceError(f"{self.what} {path} cannot be read: {exc}") from None
        return Batch(messages, {"fingerprint": session.fingerprint}, True)
