"""The catalog: every stored memory version the retriever ranks, held in memory, with the lexical
index and name links over them (graph.search.retrieval.Retriever searches it)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graph.backends.lexical import LexicalSearch
from graph.core.contract import MemoryStatus, parse_timestamp
from graph.core.lexical import LexicalIndex
from graph.core.memories import Memory
from graph.search.links import NameLinks
from graph.search.snapshot import load as load_snapshot

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class Catalog:
    """Every stored memory version, in memory, with the lexical index over them (in memory by
    default; the team backend's is Postgres full-text, which the database keeps)."""

    def __init__(
        self, memories: Iterable[Memory], lexical: LexicalSearch | None = None, snapshot: Path | None = None
    ) -> None:
        """`snapshot`: a catalog snapshot (graph.search.snapshot) to take the in-memory lexical index and
        name links from, for the memories it covers; the rest are indexed from their text."""
        self._lock = threading.Lock()
        self.by_id: dict[str, Memory] = {}
        self.created: dict[str, datetime] = {}
        self.created_us: dict[str, int] = {}
        """`created` as exact microseconds since the epoch: recency's ages at a ranking's hot loop, without
        datetime arithmetic (int differences over 10**6 are what timedelta.total_seconds computes)."""
        self._topics: dict[str, list[str]] = defaultdict(list)
        self.lexical: LexicalSearch = lexical if lexical is not None else LexicalIndex()
        self.links = NameLinks()
        self.changes = 0
        """Counts status changes made after loading (a confirmed supersession), for caches."""
        self.from_snapshot = 0
        """How many memories the snapshot covered (their text was not indexed again)."""
        memories = list(memories)
        if snapshot is not None and isinstance(self.lexical, LexicalIndex) and not len(self.lexical):
            unique = len({m.memory_id for m in memories}) == len(memories)  # the store's always are
            restored = load_snapshot(snapshot, memories) if unique else None
            if restored is not None:
                state, names = restored
                self.lexical.restore(state)
                self.links.restore(zip(state.ids, names, strict=True))
                self.from_snapshot = len(state.ids)
        for memory in memories[: self.from_snapshot]:
            self._catalogue(memory)
        for memory in memories[self.from_snapshot :]:
            self.add(memory)

    def add(self, memory: Memory) -> None:
        """A new version supersedes the older ones of its topic, as the store already did."""
        if self._catalogue(memory):
            text = memory.text()
            self.lexical.add(memory.memory_id, text)
            self.links.add(memory.memory_id, text)

    def _catalogue(self, memory: Memory) -> bool:
        """Everything add does but index the text; False when the memory was already catalogued."""
        with self._lock:
            if memory.memory_id in self.by_id:  # already catalogued (a backlog may queue it twice)
                return False
            for other in self._topics[memory.topic_id]:
                # Backlog embedding may add an older version after a newer one.
                if self.by_id[other].version < memory.version:
                    self.by_id[other].status = MemoryStatus.SUPERSEDED
                else:
                    memory.status = MemoryStatus.SUPERSEDED
            self.by_id[memory.memory_id] = memory
            created = self.created[memory.memory_id] = parse_timestamp(memory.created_at)
            self.created_us[memory.memory_id] = (created - _EPOCH) // _MICROSECOND
            self._topics[memory.topic_id].append(memory.memory_id)
        return True

    def __len__(self) -> int:
        return len(self.by_id)

    def newest(self, topic_id: str) -> str | None:
        """The memoryId of a topic's newest version (None: no such topic)."""
        with self._lock:
            ids = list(self._topics.get(topic_id, ()))
        return max(ids, key=lambda m: self.by_id[m].version) if ids else None

    def set_status(self, memory_id: str, status: MemoryStatus) -> None:
        with self._lock:
            self.by_id[memory_id].status = status
            self.changes += 1
