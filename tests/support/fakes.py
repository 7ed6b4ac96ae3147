"""In-process stand-ins behind the engine's Protocols (graph.search.retrieval's TextEncoder,
ChunkIndex and GraphSearch; graph.cognify.operations' GraphWorker): they hold exactly what a
test sets up and nothing else, the way httpx's MockTransport stands in for a network."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graph.core.contract import MemoryStatus
from graph.core.graph_projection import LaneRecords
from graph.core.memories import Memory
from graph.search.links import Hop

QUERY_AXIS, HINT_AXIS = 0, 1
DIMENSIONS = 3


def memory(
    memory_id: str,
    *,
    topic_id: str | None = None,
    version: int = 1,
    status: MemoryStatus = MemoryStatus.ACTIVE,
    topic: str | None = None,
    context: str | None = None,
    decisions: list[str] | None = None,
    created: str = "2025-03-01T10:00:00Z",
    **fields: Any,
) -> Memory:
    """A memory version; topic and context default to filler words that match no query, the
    other lists to empty and the optional fields to None; `fields` sets any other Memory field."""
    blank: dict[str, Any] = {name: [] for name in ("rationale", "open_questions", "next_steps", "references")}
    blank.update(dict.fromkeys(("time_scope", "agent_name", "session_id", "plan_id")))
    return Memory(
        memory_id=memory_id,
        topic_id=topic_id or memory_id,
        version=version,
        status=status,
        topic=f"note {memory_id}" if topic is None else topic,
        context="unrelated filler text" if context is None else context,
        decisions=decisions or [],
        created_at=created,
        updated_at=created,
        **{**blank, **fields},
    )


class HashEncoder:
    """Words hashed into 384 buckets, normalised: texts sharing words are close."""

    model_path = "/models/all-MiniLM-L6-v2"
    variant = "hash"
    dimensions = 384

    def encode(self, texts: list[str]) -> list[list[float]]:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for row, value in enumerate(texts):
            for word in re.findall(r"\w+", value.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out.tolist()


class FakeEncoder:
    """The query text points along one axis and the hints text along another, so a chunk's
    cosine with the question is exactly the coordinate a test gives it."""

    def __init__(self, query: str, hints: str = "") -> None:
        self._axes = {query: QUERY_AXIS, **({hints: HINT_AXIS} if hints else {})}
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * DIMENSIONS
            vector[self._axes[text]] = 1.0
            vectors.append(vector)
        return vectors


def chunk_vector(query_cosine: float, hint_cosine: float = 0.0) -> list[float]:
    """A unit vector with these cosines to the query and hints axes (the rest on a third axis)."""
    rest = 1.0 - query_cosine**2 - hint_cosine**2
    assert rest >= 0, "cosines of a unit vector"
    return [query_cosine, hint_cosine, math.sqrt(rest)]


class FakeChunkIndex:
    """Exact cosine search over the chunk vectors a test sets up (memory id -> chunk vectors)."""

    def __init__(self, chunks: dict[str, Iterable[list[float]]]) -> None:
        self._rows = [(memory_id, vector) for memory_id, vectors in chunks.items() for vector in vectors]
        self.limits: list[int] = []

    def count(self) -> int:
        return len(self._rows)

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        self.limits.append(limit)
        scored = [(memory_id, sum(a * b for a, b in zip(row, vector, strict=True))) for memory_id, row in self._rows]
        return sorted(scored, key=lambda pair: -pair[1])[:limit]


@dataclass
class FakeGraph:
    """Entities per text, memories per entity (seed scores) and a fixed expansion result."""

    entities: dict[str, dict[str, float]] = field(default_factory=dict)
    mentions: dict[str, dict[str, float]] = field(default_factory=dict)
    expansion: dict[str, float] = field(default_factory=dict)
    ubiquitous: set[str] = field(default_factory=set)
    refreshed: int = 0
    expand_calls: list[tuple[dict[str, float], set[str]]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    names: dict[str, dict[str, str]] = field(default_factory=dict)

    def refresh(self) -> None:
        self.refreshed += 1

    def ubiquitous_words(self) -> set[str]:
        return set(self.ubiquitous)

    def query_entities(self, text: str) -> dict[str, float]:
        return dict(self.entities.get(text, {}))

    def seed(self, entities: dict[str, float], limit: int) -> dict[str, float]:
        scores: dict[str, float] = {}
        for entity, weight in entities.items():
            for memory_id, score in self.mentions.get(entity, {}).items():
                scores[memory_id] = max(scores.get(memory_id, 0.0), weight * score)
        return scores if len(scores) <= limit else dict(sorted(scores.items(), key=lambda kv: -kv[1])[:limit])

    def expand(
        self, seeds: dict[str, float], exclude: set[str], near: Collection[str] = (), strong: float = 0.0
    ) -> dict[str, Hop]:
        """Every expansion memory is reached from the strongest seed through one entity, "e_link"."""
        self.expand_calls.append((dict(seeds), set(exclude)))
        source = max(seeds, key=lambda m: seeds[m])
        return {m: Hop(score, source, ("e_link",)) for m, score in self.expansion.items()}

    def supersession_inputs(self) -> tuple[float | None, list[tuple[str, str, str]], dict[str, dict[str, str]]]:
        return None, list(self.relations), {m: dict(names) for m, names in self.names.items()}


class FakeWorker:
    """Plays a script, one step per batch: a metrics dict, an exception to raise, or an
    asyncio.Event to wait on (a batch that runs until the test lets it finish)."""

    def __init__(self, *script: dict[str, Any] | BaseException | asyncio.Event) -> None:
        self.script = deque(script)
        self.batches: list[list[str]] = []
        self.forgets: list[list[str]] = []
        self.calls: list[str] = []
        """"batch" and "forget", in the order they started."""
        self.stops = 0

    async def forget(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        self.calls.append("forget")
        self.forgets.append(list(memory_ids))
        return {"forgotten": len(memory_ids)}

    async def run_batch(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        self.calls.append("batch")
        self.batches.append(list(memory_ids))
        step = self.script.popleft() if self.script else {}
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, asyncio.Event):
            await step.wait()
            return {"memories": len(memory_ids)}
        return step

    async def stop(self, grace_sec: float = 5.0) -> None:
        self.stops += 1


class HashEmbedder:
    """Deterministic unit vectors from the text's hash: equal texts, equal vectors."""

    dimensions = 384

    def encode(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).standard_normal(self.dimensions).astype(np.float32)
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out


class FixedLaneRecords:
    """A projection source serving fixed lane records (graph.backends.projection.ProjectionSource)."""

    def __init__(self, records: LaneRecords) -> None:
        self.records = records

    def stamp(self) -> object | None:
        return 1.0

    def read_lane(self) -> tuple[object | None, LaneRecords | None]:
        return 1.0, self.records
