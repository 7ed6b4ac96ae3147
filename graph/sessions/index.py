"""The session index: import, update and repair sessions, report Vapor's statuses, search.

Synchronous and thread-safe: the async front runs each call in a worker thread. Sessions are
keyed `<source>:<session id>`; chunk texts and watermarks live in SQLite, vectors in LanceDB
(or both in the namespace's Postgres schema: graph.backends.sessions).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from graph.backends.backend import Backend, open_backend
from graph.backends.sessions import SessionVectorStore
from graph.core.session_chunk import TurnChunk
from graph.core.workspace import WorkspacePaths
from graph.sessions.chunking import message_chunks
from graph.sessions.config import SessionSettings
from graph.sessions.lexicon import ChunkLexicon
from graph.sessions.model import SessionInfo, Source, SourceError, iso_ms, within
from graph.sessions.ranking import LANES, VECTOR_CANDIDATES, WEAK_CANDIDATES, TurnHit, abstain_reason, fuse
from graph.sessions.sources.claude_code import ClaudeCodeSource
from graph.sessions.sources.codex import CodexSource
from graph.sessions.sources.gemini import GeminiSource
from graph.sessions.sources.opencode import OpenCodeSource
from graph.sessions.turn_order import TurnOrder

EMBED_BATCH = 256
"""Chunks embedded and written per step: an interrupted import leaves a `partial` index."""


class Encoder(Protocol):
    model_path: str

    @property
    def dimensions(self) -> int:
        """The vector size, read from the model."""

    @property
    def variant(self) -> str:
        """Names the graph the vectors come from; vectors of another variant are not comparable."""

    def encode(self, texts: list[str]) -> list[list[float]]: ...


class SearchOutcome(NamedTuple):
    results: list[dict[str, Any]]
    abstained: str | None
    """Why no turn is shown (only with `abstain`)."""
    weak: list[dict[str, Any]]
    """When abstained: the best turns anyway, flagged `weak`."""
    hits: list[TurnHit] = []
    """The turns behind `results`, then behind `weak` (their lane scores, for retrieveForAgent)."""


class SessionNotFound(LookupError):
    pass


class OutsideWorkspace(ValueError):
    pass


def sources_from(settings: SessionSettings) -> list[Source]:
    found: list[Source] = []
    if settings.opencode:
        found.append(OpenCodeSource(settings.opencode_dir))
    if settings.claude_code:
        found.append(ClaudeCodeSource(settings.claude_dir))
    if settings.codex:
        found.append(CodexSource(settings.codex_dir))
    if settings.gemini:
        found.append(GeminiSource(settings.gemini_dir))
    return found


def model_label(model_path: str) -> str:
    """Vapor's `model` string: "MiniLM all-MiniLM-L6-v2" for the bundled model, else the folder's name."""
    parts = [p for p in Path(model_path).parts if "minilm" in p.lower()]
    name = parts[-1] if parts else os.path.basename(model_path.rstrip("/"))
    if name.lower().replace("_", "-").endswith("all-minilm-l6-v2"):
        return "MiniLM all-MiniLM-L6-v2"
    return name


class SessionIndex:
    def __init__(
        self,
        workspace: Path,
        folder: Path,
        encoder: Encoder,
        settings: SessionSettings,
        sources: list[Source],
        vectors_idle_sec: float | None = None,
        backend: Backend | None = None,
    ) -> None:
        """`vectors_idle_sec`: the vectors' LanceDB runs in a child process that exits after that
        long without a call (graph.backends.embedded.session_table); None: in this process. `backend`: where
        the index is kept (default: as the process environment chooses)."""
        self.workspace = os.path.normpath(str(workspace))
        self.encoder = encoder
        self.settings = settings
        self.sources = {source.name: source for source in sources}
        self.backend = backend or open_backend(WorkspacePaths(Path(workspace)))
        self.store = self.backend.session_store(folder)
        self._folder = folder
        self._vectors: SessionVectorStore | None = None
        self._vectors_idle_sec = vectors_idle_sec
        self.model = model_label(encoder.model_path)
        self.lexicon = ChunkLexicon()
        self.order = TurnOrder(self.store)
        self._busy: set[str] = set()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.stopping = threading.Event()
        """Set at close: a running import stops after its current batch (a `partial` index, finished later)."""

    @property
    def vectors(self) -> SessionVectorStore:
        """Opened on first need: the watcher lists sources every few seconds, and a workspace
        without sessions should not hold LanceDB's table (tens of MB) for it. Vectors made by
        another encoder variant (say, before the int8 session model) are dropped: their sessions
        show `repair_needed` until repaired or updated."""
        with self._guard:
            if self._vectors is None:
                vectors = self.backend.session_vectors(self._folder, self.encoder.dimensions, self._vectors_idle_sec)
                vectors.keep_variant(self.encoder.variant)
                self._vectors = vectors
            return self._vectors

    # -- finding sessions -------------------------------------------------------------
    def root(self, cwd: str | None) -> str:
        """The folder sessions are matched against: `cwd` (inside the workspace) or the workspace."""
        if not cwd:
            return self.workspace
        path = os.path.normpath(os.path.abspath(cwd))
        if not within(path, self.workspace) and not within(os.path.realpath(path), self.workspace):
            raise OutsideWorkspace(f"{cwd} is not inside the workspace {self.workspace}")
        return path if within(path, self.workspace) else os.path.realpath(path)

    def listed(self, cwd: str | None = None, source: str | None = None) -> tuple[list[SessionInfo], list[str]]:
        """The sessions under `cwd` (default: the workspace), newest first, and the problems
        of sources that could not be read."""
        root = self.root(cwd)
        found: list[SessionInfo] = []
        problems: list[str] = []
        for name, adapter in self.sources.items():
            if source and name != source:
                continue
            try:
                found.extend(s for s in adapter.sessions(self.workspace) if within(s.directory, root))
                problems.extend(adapter.problems)
            except SourceError as exc:
                problems.append(str(exc))
            except Exception as exc:  # a source we cannot parse is a status message, never a crash
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        found.sort(key=lambda s: -s.updated_ms)
        return found, problems

    def find(self, session_id: str, source: str | None = None) -> tuple[SessionInfo, list[str]]:
        sessions, problems = self.listed(None, source)
        for info in sessions:
            if info.session_id == session_id:
                return info, problems
        for key in self.store.keys_under(self.workspace):  # imported, its source unreadable or gone
            record = self.store.record(key)
            if record and record[1] == session_id and (not source or record[0] == source):
                return SessionInfo(record[0], session_id, record[3], record[2], 0, 0), problems
        if problems:  # perhaps in the source we could not read: a status, not a 404
            return SessionInfo(source or "", session_id, "", "", 0, 0), problems
        raise SessionNotFound(f'No session "{session_id}" in the workspace {self.workspace}')

    def resolve(self, session_id: str, source: str | None = None) -> SessionInfo:
        """An imported session straight from the bookkeeping (search needs no fresh listing), else find()."""
        for key in self.store.keys_for(session_id):
            record = self.store.record(key)
            if record and (not source or record[0] == source):
                return SessionInfo(record[0], session_id, record[3], record[2], 0, 0)
        return self.find(session_id, source)[0]

    def current(self, cwd: str | None, source: str | None) -> tuple[SessionInfo | None, list[str]]:
        """The newest top-level, non-archived session whose directory is `cwd`, else the nearest ancestor's."""
        sessions, problems = self.listed(None, source)
        candidates = [s for s in sessions if s.top_level and not s.archived]
        folder = self.root(cwd)
        while True:
            here = [s for s in candidates if s.directory == folder]
            if here:
                return max(here, key=lambda s: s.updated_ms), problems
            if folder == self.workspace or os.path.dirname(folder) == folder:
                return None, problems
            folder = os.path.dirname(folder)

    # -- status -----------------------------------------------------------------------
    def status(self, info: SessionInfo, problems: list[str] | None = None) -> dict[str, Any]:
        key = info.key
        record = self.store.imported(key)
        chunks = self.store.chunk_count(key)
        vectors = self.vectors.count(key)
        sid = info.session_id
        if key in self._busy:
            state, message = "indexing", "Importing or indexing is in progress. Wait and retry shortly."
        elif record is None:
            state, message = "missing", f"Session is not imported. Run `flowbaby sessions import {sid}` to index it."
        elif chunks and not vectors:
            state = "repair_needed"
            message = (
                f"Imported content exists but no search vectors are available. Run `flowbaby sessions repair {sid}`."
            )
        elif vectors < chunks:
            state = "partial"
            message = (
                f"Search is usable but incomplete ({vectors} of {chunks} chunks searchable). "
                f"Run `flowbaby sessions update {sid}` if recall matters."
            )
        elif info.fingerprint and record.fingerprint != info.fingerprint:
            state = "dirty"
            message = (
                f"Search is usable; the session has newer turns than the index. Run `flowbaby sessions update {sid}` "
                "for best recall (serve and the bridge pick new turns up on their own)."
            )
        else:
            state, message = "ready", "Search is ready."
        if problems:
            message += " Source problem: " + "; ".join(problems)
        return {
            "status": state,
            "can_search": state in ("ready", "dirty", "partial") or (state == "indexing" and vectors > 0),
            "needs_update": state in ("dirty", "partial"),
            "needs_repair": state == "repair_needed",
            "chunks": chunks,
            "vectors": vectors,
            "coverage": round(vectors / chunks, 3) if chunks else (1.0 if record is not None else 0.0),
            "model": self.model,
            "message": message,
        }

    def describe(self, info: SessionInfo, problems: list[str] | None = None) -> dict[str, Any]:
        """Vapor's session shape with its index_status."""
        return {
            "source": info.source,
            "session_id": info.session_id,
            "title": info.title,
            "directory": info.directory,
            "updated_at": info.updated_at,
            "message_count": info.message_count,
            "index_status": self.status(info, problems),
        }

    # -- actions ----------------------------------------------------------------------
    @contextmanager
    def _working(self, key: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            self._busy.add(key)
            try:
                yield
            finally:
                self._busy.discard(key)

    def import_session(self, info: SessionInfo) -> dict[str, Any]:
        """Read the whole session again and index it."""
        return self._ingest(info, incremental=False)

    def update_session(self, info: SessionInfo) -> dict[str, Any]:
        """Index what changed since the last import (new turns, grown messages) and embed any
        chunk still without a vector; a session never imported is imported."""
        return self._ingest(info, incremental=True)

    def repair_session(self, info: SessionInfo) -> dict[str, Any]:
        """Embed every chunk that has no vector and drop vectors of chunks that are gone."""
        key = info.key
        with self._working(key):
            chunk_ids = set(self.store.chunk_ids(key))
            self.vectors.remove(key, self.vectors.ids(key) - chunk_ids)
            embedded = self._embed_missing(key)
        return {"embedded": embedded}

    def _ingest(self, info: SessionInfo, incremental: bool) -> dict[str, Any]:
        key = info.key
        source = self.sources.get(info.source)
        if source is None:
            raise SourceError(f"The {info.source or 'session'} source is switched off or unknown")
        with self._working(key):
            record = self.store.imported(key)
            batch = source.read(info, record.watermark if incremental and record else None)
            chunks = [c for m in batch.messages for c in message_chunks(info.session_id, m, self.settings.reasoning)]
            message_ids = [m.message_id for m in batch.messages]
            old = self.store.texts(key, message_ids) if not batch.full else self._all_texts(key)
            fresh = {c.embedding_id: c.text for c in chunks}
            stale = {eid for eid, text in old.items() if fresh.get(eid) != text}
            self.vectors.remove(key, stale & self.vectors.ids(key))
            self.store.replace_messages(key, message_ids, chunks, batch.full)
            mark = iso_ms(int(time.time() * 1000))
            self.store.mark_imported(
                key, info.source, info.session_id, info.directory, info.title, info.fingerprint, batch.watermark, mark
            )
            self.lexicon.follow(
                key, record.imported_at if record else None, old, [(c.embedding_id, c.text) for c in chunks], mark
            )
            self.order.drop(key)
            embedded = self._embed_missing(key, chunks)
        return {"messages": len(batch.messages), "chunks": len(chunks), "embedded": embedded}

    def _all_texts(self, key: str) -> dict[str, str]:
        ids = self.store.chunk_ids(key)
        return {eid: row["text"] for eid, row in self.store.chunks_by_id(ids).items()}

    def _embed_missing(self, key: str, chunks: list[TurnChunk] | None = None) -> int:
        have = self.vectors.ids(key)
        wanted = [c.embedding_id for c in chunks] if chunks is not None else []
        missing = [eid for eid in dict.fromkeys([*wanted, *self.store.chunk_ids(key)]) if eid not in have]
        seen: dict[str, np.ndarray] = {}  # repeated outputs ("Done.", the same test run) embed once per call
        for start in range(0, len(missing), EMBED_BATCH):
            if self.stopping.is_set():
                break
            ids = missing[start : start + EMBED_BATCH]
            rows = self.store.chunks_by_id(ids)
            ids = [eid for eid in ids if eid in rows]
            texts = [rows[eid]["text"] for eid in ids]
            unique = [text for text in dict.fromkeys(texts) if text not in seen]
            if unique:
                encoded = np.asarray(self.encoder.encode(unique), dtype=np.float32)
                seen.update(zip(unique, encoded, strict=True))
            if ids:
                self.vectors.add(key, ids, np.stack([seen[text] for text in texts]))
        return len(missing)

    # -- search -----------------------------------------------------------------------
    def search(
        self,
        keys: list[str],
        query: str,
        limit: int,
        abstain: bool = False,
        lanes: frozenset[str] = LANES,
        neighbours: bool = True,
    ) -> SearchOutcome:
        """The best `limit` turns of these sessions, one result per turn (its best chunk shown),
        fused from the vector and lexical lanes and the neighbouring turns' evidence (`neighbours`);
        with `abstain`, none when no turn is close (graph.sessions.ranking), and up to two weak
        candidates instead."""
        if not keys:
            return SearchOutcome([], None, [])
        vector = np.asarray(self.encoder.encode([query])[0], dtype=np.float32)
        nearest = self.vectors.nearest(keys, vector, max(VECTOR_CANDIDATES, limit)) if "vector" in lanes else []
        # one read of the import marks for the lexical lane's sync and the turn order
        marks = self.store.import_marks() if "lexical" in lanes or neighbours else None
        lexical: dict[str, tuple[str, float]] = {}
        if "lexical" in lanes:
            self.lexicon.sync(self.store, keys, marks)
            lexical = self.lexicon.search(keys, query, everything=set(keys) >= self.lexicon.keys())
        near = {eid for _, eid, _ in nearest}
        wanted: dict[str, list[str]] = {}
        for eid, (key, _) in lexical.items():
            if eid not in near:
                wanted.setdefault(key, []).append(eid)
        similarities = self.vectors.similarities(wanted, vector) if wanted else {}
        rows = self.store.chunks_by_id(list(near | set(lexical)))
        around = self.order.around({str(row["session_key"]) for row in rows.values()}, marks) if neighbours else None
        ranked = fuse(nearest, lexical, similarities, rows, lanes, around)
        reason = abstain_reason(ranked, self.lexicon.known_share(query)) if abstain else None
        if reason:
            weak = ranked[:WEAK_CANDIDATES]
            return SearchOutcome([], reason, [self._result(hit, weak=True) for hit in weak], weak)
        return SearchOutcome([self._result(hit) for hit in ranked[:limit]], None, [], ranked[:limit])

    @staticmethod
    def _result(hit: TurnHit, weak: bool = False) -> dict[str, Any]:
        """Vapor's result fields (`distance`: the shown chunk's vector distance, null without a vector),
        then ours: the fused `score` and the `lanes` that found the turn."""
        result: dict[str, Any] = {
            "embedding_id": hit.best_chunk,
            "distance": round(1.0 - hit.similarity, 6) if hit.similarity is not None else None,
            "chunk_text": hit.text,
            "turn_source_id": hit.message_id,
            "session_id": hit.key.split(":", 1)[1],
            "chunk_index": hit.chunk_index,
            "source": hit.key.split(":", 1)[0],
            "created_at": iso_ms(hit.created_ms),
            "score": hit.score,
            "lanes": sorted(hit.lanes),
        }
        if weak:
            result["weak"] = True
        return result

    def context(self, key: str, query: str, context_turns: int, limit: int) -> list[dict[str, Any]]:
        """The best hits, each with the `context_turns` turns before and after it, in order."""
        hits = self.search([key], query, limit).results
        turns = self.store.turns(key)
        position = {mid: i for i, (mid, *_rest) in enumerate(turns)}
        results = []
        for hit in hits:
            at = position.get(hit["turn_source_id"])
            if at is None:
                continue
            window = turns[max(0, at - context_turns) : at + context_turns + 1]
            texts = self.store.turn_texts(key, [mid for mid, *_rest in window])
            hit["turns"] = [
                {
                    "turn_source_id": mid,
                    "role": role,
                    "created_at": iso_ms(created),
                    "text": texts.get(mid, ""),
                    "is_hit": mid == hit["turn_source_id"],
                }
                for mid, _order, role, created in window
            ]
            results.append(hit)
        return results

    def keys_under(self, cwd: str | None) -> list[str]:
        """Imported sessions under `cwd` (default: the whole workspace), whatever their source's state."""
        root = self.root(cwd)
        return self.store.keys_under(root)

    def close(self, wait_sec: float = 30.0) -> None:
        """Stop running work at its next batch, wait for it (bounded), then close the bookkeeping."""
        self.stopping.set()
        until = time.monotonic() + wait_sec
        while self._busy and time.monotonic() < until:
            time.sleep(0.05)
        self.store.close()
        if self._vectors is not None:
            self._vectors.close()
