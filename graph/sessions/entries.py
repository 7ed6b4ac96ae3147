"""Session turns as retrieval entries (retrieveForAgent's `includeSessions`), ranked in one list
with the curated memories.

A turn's score is put on the memories' scale: (its best chunk cosine + its best BM25 share) divided
by the memories' whole lane weight (graph.search.retrieval), what a memory matched equally well by
those two lanes alone would score. A turn is left out when a memory of
the answer was captured from the same session and already holds its words (MOSTLY_HELD).
"""

from __future__ import annotations

from typing import Any

from graph.core.contract import MemoryStatus, RetrievalEntry, SessionTurnRef
from graph.core.text import tokenize
from graph.search.retrieval import (
    GRAPH_EXPANSION_WEIGHT,
    GRAPH_SEED_WEIGHT,
    LEXICAL_WEIGHT,
    SECOND_CHUNK_WEIGHT,
    VECTOR_WEIGHT,
)
from graph.search.token_budget import count_tokens, truncate_to_tokens
from graph.sessions.ranking import TurnHit

MEMORY_WEIGHT = LEXICAL_WEIGHT + VECTOR_WEIGHT * (1 + SECOND_CHUNK_WEIGHT) + GRAPH_SEED_WEIGHT + GRAPH_EXPANSION_WEIGHT
MOSTLY_HELD = 0.6
"""Share of a turn's distinct words a memory of the same session must hold for the turn to be its copy."""


def session_entry(
    result: dict[str, Any], hit: TurnHit, title: str, max_tokens: int, weak: bool = False
) -> RetrievalEntry:
    """One session search result (graph.sessions.index) and its turn's lane scores as an entry."""
    vector = max(hit.vector, hit.similarity or 0.0)
    text = result["chunk_text"]
    if count_tokens(text) > max_tokens:
        text = truncate_to_tokens(text, max_tokens)
    return RetrievalEntry(
        summaryText=text,
        topic=f"Session turn: {title}" if title else "Session turn",
        context=text,
        topicId=f"session:{result['source']}:{result['session_id']}:{result['turn_source_id']}",
        planId=None,
        sessionId=result["session_id"],
        createdAt=result["created_at"],
        updatedAt=result["created_at"],
        status=MemoryStatus.ACTIVE,
        version=0,
        memoryId=result["embedding_id"],
        score=round(min(1.0, max(0.0, vector + hit.lexical) / MEMORY_WEIGHT), 6),
        decisions=[],
        lanes=["session", *result["lanes"]],
        tokens=count_tokens(text),
        source="session",
        sessionTurn=SessionTurnRef(
            source=result["source"],
            sessionId=result["session_id"],
            turnId=result["turn_source_id"],
            embeddingId=result["embedding_id"],
            chunkIndex=result["chunk_index"],
            title=title,
            distance=result["distance"],
        ),
        weak=weak,
    )


def _held(turn: RetrievalEntry, memories: list[RetrievalEntry]) -> bool:
    words = set(tokenize(turn.summaryText))
    if not words:
        return False
    for memory in memories:
        if memory.sessionId and memory.sessionId == turn.sessionId:
            text = " ".join([memory.topic, memory.context, *memory.decisions])
            if len(words & set(tokenize(text))) >= MOSTLY_HELD * len(words):
                return True
    return False


def merge(
    memories: list[RetrievalEntry], turns: list[RetrievalEntry], max_results: int, max_tokens: int
) -> tuple[list[RetrievalEntry], int]:
    """One list by score (memories first on ties), packed into max_results and max_tokens."""
    pool = [*memories, *(t for t in turns if not _held(t, memories))]
    order = sorted(range(len(pool)), key=lambda i: (-pool[i].score, pool[i].source != "memory", i))
    out: list[RetrievalEntry] = []
    used = 0
    for i in order:
        entry = pool[i]
        if len(out) >= max_results:
            break
        if used + entry.tokens > max_tokens:
            continue
        out.append(entry)
        used += entry.tokens
    return out, used
