"""The lexical lane: BM25 over each memory's whole text, with an inverted index.

Scores are self-normalised: divided by the best score the query could reach
(sum over its matched terms of qtf * idf * (k1 + 1)), which gives a 0-1 value that
means the same whatever else is in the workspace, so it fuses with cosine scores
without per-query rescaling.

Postings are append-only arrays of memory positions, so a query scores each of its
terms with a few numpy operations instead of a Python loop over every memory that
holds it (a common word is in thousands); the arithmetic is the same, term by term,
so the scores are the same floats. They grow as `array.array`s (an append is a C call: building
the index at start appends ~18 postings a memory, 1.8M at 100k memories) and a query reads them
through numpy views without copying.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import Counter
from typing import NamedTuple

import numpy as np

from graph.core.text import tokenize

K1 = 1.2
B = 0.75


class LexicalState(NamedTuple):
    """LexicalIndex.export's arrays: memory ids by position, their lengths in terms, the terms in the
    order first seen, and each term's postings at positions/tfs[term_offsets[i]:term_offsets[i + 1]]."""

    ids: list[str]
    lengths: np.ndarray
    terms: list[str]
    term_offsets: np.ndarray
    positions: np.ndarray
    tfs: np.ndarray


class _Postings:
    """One term's (memory position, tf) pairs, in the order memories were added."""

    __slots__ = ("positions", "tfs")

    def __init__(self) -> None:
        self.positions = array("q")
        self.tfs = array("d")

    @property
    def size(self) -> int:
        return len(self.positions)


def _score_term(
    postings: _Postings,
    weight: float,
    rank: int,
    relative_lengths: np.ndarray,
    scores: np.ndarray,
    first_term: np.ndarray,
) -> None:
    """Add one query term's BM25 (its qtf * idf as `weight`) to the memories holding it. The numpy views
    of the term's arrays end with this call, inside the index's lock: an array with a view on it cannot grow."""
    positions = np.frombuffer(postings.positions, dtype=np.int64)
    tfs = np.frombuffer(postings.tfs, dtype=np.float64)
    norm = K1 * (1 - B + B * relative_lengths[positions])
    scores[positions] += weight * tfs * (K1 + 1) / (tfs + norm)
    first_term[positions[first_term[positions] > rank]] = rank


class LexicalIndex:
    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._positions: dict[str, int] = {}
        self._ids: list[str] = []
        self._lengths = np.empty(1024, dtype=np.float64)
        self._total_length = 0
        self._lock = threading.Lock()

    def add(self, memory_id: str, text: str) -> None:
        counts = Counter(tokenize(text))
        with self._lock:
            if memory_id in self._positions:
                return
            position = len(self._ids)
            for term, tf in counts.items():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = _Postings()
                postings.positions.append(position)
                postings.tfs.append(tf)
            if position == len(self._lengths):
                self._lengths = np.resize(self._lengths, 2 * position)
            length = sum(counts.values())
            self._lengths[position] = length
            self._positions[memory_id] = position
            self._ids.append(memory_id)
            self._total_length += length

    def __len__(self) -> int:
        return len(self._ids)

    def export(self) -> LexicalState:
        """The index as flat arrays (graph.search.snapshot keeps them between starts)."""
        with self._lock:
            terms = list(self._postings)
            sizes = np.fromiter((self._postings[t].size for t in terms), dtype=np.int64, count=len(terms))
            offsets = np.zeros(len(terms) + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            positions = np.empty(int(offsets[-1]), dtype=np.int64)
            tfs = np.empty(int(offsets[-1]), dtype=np.float64)
            for i, term in enumerate(terms):
                postings = self._postings[term]
                positions[offsets[i] : offsets[i + 1]] = np.frombuffer(postings.positions, dtype=np.int64)
                tfs[offsets[i] : offsets[i + 1]] = np.frombuffer(postings.tfs, dtype=np.float64)
                del postings  # no view outlives the lock
            return LexicalState(list(self._ids), self._lengths[: len(self._ids)].copy(), terms, offsets, positions, tfs)

    def restore(self, state: LexicalState) -> None:
        """An empty index becomes the exported one: what adding the same texts in the same order gives."""
        with self._lock:
            assert not self._ids, "restore into an empty index"
            offsets = state.term_offsets.tolist()
            positions, tfs = state.positions.data.cast("B"), state.tfs.data.cast("B")
            for i, term in enumerate(state.terms):  # slices of the arrays' buffers: no copy of the whole
                postings = self._postings[term] = _Postings()
                postings.positions.frombytes(positions[8 * offsets[i] : 8 * offsets[i + 1]])
                postings.tfs.frombytes(tfs[8 * offsets[i] : 8 * offsets[i + 1]])
            positions.release()
            tfs.release()
            self._ids = list(state.ids)
            self._positions = {memory_id: i for i, memory_id in enumerate(self._ids)}
            self._lengths = np.resize(state.lengths.astype(np.float64), max(1024, len(self._ids)))
            self._total_length = int(state.lengths.sum())

    def knows(self, text: str) -> bool:
        """Whether every term of the text is in some memory."""
        with self._lock:
            return all(term in self._postings for term in tokenize(text))

    def known_share(self, query: str) -> float:
        """The share of the query's term weight (qtf * idf) on terms some memory holds. A term no memory
        holds weighs what a term in no memory would (the highest idf), so "Japanese localisation" counts
        against a workspace that only knows "plan", which search's self-normalised scores cannot show."""
        query_terms = Counter(tokenize(query))
        with self._lock:
            n = len(self._ids)
            if not n or not query_terms:
                return 1.0
            known = total = 0.0
            for term, qtf in query_terms.items():
                postings = self._postings.get(term)
                df = postings.size if postings is not None else 0
                weight = qtf * math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += weight
                known += weight if df else 0.0
        return known / total if total > 0 else 1.0

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        """memory_id -> normalised BM25 in [0, 1], for memories sharing a query term, in the order
        they were first reached (query term by query term, then as added). With a limit: only the
        best `limit`, best first, ties in that order (what heapq.nlargest over the full dict gives)."""
        query_terms = Counter(tokenize(query))
        with self._lock:
            n = len(self._ids)
            if not n or not query_terms:
                return {}
            relative_lengths = self._lengths[:n] / (self._total_length / n)
            scores = np.zeros(n)
            first_term = np.full(n, len(query_terms), dtype=np.int64)
            attainable = 0.0
            for rank, (term, qtf) in enumerate(query_terms.items()):
                postings = self._postings.get(term)
                if postings is None:
                    continue
                idf = math.log(1 + (n - postings.size + 0.5) / (postings.size + 0.5))
                attainable += qtf * idf * (K1 + 1)
                _score_term(postings, qtf * idf, rank, relative_lengths, scores, first_term)
            ids = self._ids
        if attainable <= 0:
            return {}
        reached = np.flatnonzero(first_term < len(query_terms))
        values = scores[reached] / attainable
        if limit is not None and len(reached) > limit:
            cut = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = np.flatnonzero(values >= cut)
            reached, values = reached[keep], values[keep]
            order = np.lexsort((reached, first_term[reached], -values))[:limit]
        else:
            order = np.lexsort((reached, first_term[reached]))
        return {ids[i]: float(v) for i, v in zip(reached[order].tolist(), values[order].tolist(), strict=True)}
