"""A memory cut into the sentences both backends embed: one `Chunk` per sentence, tagged with its
field. MiniLM reads 256 word pieces at most, so one vector per long text would lose its tail;
these chunks make a memory searchable the moment it is staged, long before its graph exists.
The embedded backend keeps their vectors in LanceDB (graph.backends.embedded.vectors), the team
backend in pgvector (graph.backends.team.vectors).
"""

from __future__ import annotations

from typing import NamedTuple

from graph.core.memories import Memory
from graph.core.sentences import sentences

MAX_CHUNK_CHARS = 600
"""MiniLM reads 256 word pieces at most; ~600 characters of English stays under that."""


def split_sentences(text: str) -> list[str]:
    """Sentences of a field, with long ones cut at word boundaries so none is truncated."""
    pieces: list[str] = []
    for paragraph in text.splitlines():
        for sentence in sentences(paragraph.strip()):
            sentence = sentence.strip()
            while len(sentence) > MAX_CHUNK_CHARS:
                cut = sentence.rfind(" ", 0, MAX_CHUNK_CHARS)
                cut = cut if cut > MAX_CHUNK_CHARS // 2 else MAX_CHUNK_CHARS
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                pieces.append(sentence)
    return pieces


class Chunk(NamedTuple):
    """One embedded sentence of a memory (a tuple: the index holds one per chunk, 600k at 100k
    memories, where a frozen dataclass cost 0.3 s more to load and ~100 MB more to keep)."""

    memory_id: str
    topic_id: str
    field: str
    chunk_index: int
    text: str


TINY_CHARS = 16
"""A sentence shorter than this carries too little to embed alone: consecutive tiny ones of a
field are merged ("a; b; c") into one chunk of up to MERGED_CHARS."""
MERGED_CHARS = 300
MAX_CHUNKS_PER_MEMORY = 256
"""Vectors per memory at most: a memory's embedding cost is bounded, so one large or odd
summary cannot hold back everyone's searches. Text past this is still found by the lexical lane."""


def memory_chunks(memory: Memory) -> list[Chunk]:
    """The memory's text cut into embeddable sentences, tagged with their field."""
    chunks: list[Chunk] = []

    def add(field: str, text: str) -> None:
        if len(chunks) < MAX_CHUNKS_PER_MEMORY:
            chunks.append(Chunk(memory.memory_id, memory.topic_id, field, len(chunks), text))

    for field, items in memory.sections():
        merged: list[str] = []
        for item in items:
            for sentence in split_sentences(item):
                if len(sentence) >= TINY_CHARS:
                    if merged:
                        add(field, "; ".join(merged))
                        merged = []
                    add(field, sentence)
                    continue
                if merged and sum(len(m) + 2 for m in merged) + len(sentence) > MERGED_CHARS:
                    add(field, "; ".join(merged))
                    merged = []
                merged.append(sentence)
        if merged:
            add(field, "; ".join(merged))
    return chunks
