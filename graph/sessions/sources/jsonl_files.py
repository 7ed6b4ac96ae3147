"""What the sources that keep sessions as JSONL files in the client's own folder share (Claude Code,
Codex, Gemini CLI): they read whole lines only (the client may be writing the last one), learn a
file's header (id, folder, title, turn count) once per size and mtime, name a file that cannot be read
in `problems` rather than failing the listing, and fingerprint a session by its files' size and mtime.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from graph.core.redaction import clean
from graph.sessions.model import Batch, Message, SessionInfo, SourceError


def ms(stamp: Any) -> int:
    """An ISO time (a trailing `Z` allowed) in epoch milliseconds; 0 when it is not one."""
    try:
        return int(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def records(path: Path) -> list[dict[str, Any]]:
    """The file's whole lines as JSON objects (a line being written, or not JSON, is skipped)."""
    found = []
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                record = json.loads(line)
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
            messages = self.conversation(records(path))
        except OSError as exc:
            raise SourceError(f"{self.what} {path} cannot be read: {exc}") from None
        return Batch(messages, {"fingerprint": session.fingerprint}, True)
