"""The lexical lane of session search: BM25 (graph.core.lexical, the memories' tokenizer and
scores) over every imported chunk of the workspace, in memory, on either backend.

The index follows the bookkeeping: SessionIndex hands it the chunks it just wrote, and before a
search it re-reads any session whose import mark changed under it (another server of the team
backend imported it, or this process restarted). A replaced chunk stays in the BM25 postings as a
dead document, skipped in results, until dead documents outnumber live ones and the index is
rebuilt at the next search; until then they weigh a little in the term statistics only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol

from graph.core.lexical import LexicalIndex

CANDIDATES = 300
"""Chunks the lane hands to fusion when every session is searched (a narrower search filters all hits)."""


class ChunkSource(Protocol):
    """What the lexicon reads from the bookkeeping (SessionStore, PgSessionStore)."""

    def import_marks(self) -> dict[str, str]: ...
    def chunk_ids(self, key: str) -> list[str]: ...
    def chunks_by_id(self, ids: list[str]) -> dict[str, dict[str, object]]: ...


class ChunkLexicon:
    def __init__(self) -> None:
        self._index = LexicalIndex()
        self._doc: dict[str, str] = {}
        """Live chunk (embedding id) -> its document id in the BM25 index."""
        self._key_of: dict[str, str] = {}
        """Document id -> session key, for live documents only."""
        self._by_key: dict[str, set[str]] = {}
        self._marks: dict[str, str] = {}
        self._generation = 0
        self._dead = 0
        self._lock = threading.Lock()

    def follow(
        self, key: str, before: str | None, removed: Iterable[str], chunks: Iterable[tuple[str, str]], mark: str
    ) -> None:
        """An import this process just wrote: applied when the index held the session as of `before`
        (its import mark then), else left to the next sync, which re-reads the session."""
        with self._lock:
            if self._marks.get(key) != before:
                return
        self.replace(key, removed, chunks, mark)

    def replace(self, key: str, removed: Iterable[str], chunks: Iterable[tuple[str, str]], mark: str | None) -> None:
        """`removed` chunks leave, `chunks` ((embedding id, text)) come in (a chunk already there is
        replaced); `mark` is the session's import mark these contents match."""
        with self._lock:
            self._generation += 1
            live = self._by_key.setdefault(key, set())
            for eid in removed:
                self._drop(eid, live)
            for eid, text in chunks:
                self._drop(eid, live)
                doc = f"{self._generation}|{eid}"
                self._index.add(doc, text)
                self._doc[eid] = doc
                self._key_of[doc] = key
                live.add(eid)
            if mark is not None:
                self._marks[key] = mark

    def _drop(self, eid: str, live: set[str]) -> None:
        doc = self._doc.pop(eid, None)
        if doc is not None:
            self._key_of.pop(doc, None)
            live.discard(eid)
            self._dead += 1

    def sync(self, store: ChunkSource, keys: Iterable[str], marks: dict[str, str] | None = None) -> None:
        """Re-read the sessions among `keys` whose import mark is not the one the index holds
        (and everything, when dead documents outnumber live ones). `marks`: the store's import marks,
        when the caller has just read them."""
        with self._lock:
            if self._dead > max(1000, len(self._doc)):
                self._index, self._doc, self._key_of, self._by_key = LexicalIndex(), {}, {}, {}
                self._marks, self._dead = {}, 0
            held = dict(self._marks)
        marks = store.import_marks() if marks is None else marks
        for key in keys:
            mark = marks.get(key)
            if mark is None or held.get(key) == mark:
                continue
            ids = store.chunk_ids(key)
            rows = store.chunks_by_id(ids)
            with self._lock:
                old = set(self._by_key.get(key, set()))
            self.replace(key, old, ((eid, str(rows[eid]["text"])) for eid in ids if eid in rows), mark)

    def search(self, keys: list[str], query: str, everything: bool) -> dict[str, tuple[str, float]]:
        """embedding id -> (session key, normalised BM25 in [0, 1]) of live chunks of `keys`.
        `everything`: the keys are every session of the index, so the best CANDIDATES suffice."""
        wanted = set(keys)
        with self._lock:
            dead = self._dead
        # dead documents may fill the best CANDIDATES: ask for as many more as there are
        hits = self._index.search(query, CANDIDATES + dead if everything else None)
        found: dict[str, tuple[str, float]] = {}
        with self._lock:
            for doc, score in hits.items():
                key = self._key_of.get(doc)
                if key is not None and key in wanted:
                    found[doc.split("|", 1)[1]] = (key, score)
                    if everything and len(found) >= CANDIDATES:
                        break
        return found

    def known_share(self, query: str) -> float:
        """The share of the query's term weight on words some chunk holds (LexicalIndex.known_share)."""
        return self._index.known_share(query)

    def keys(self) -> set[str]:
        with self._lock:
            return {key for key, live in self._by_key.items() if live}
