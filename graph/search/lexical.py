"""The lexical lane: BM25 over each memory's whole text, with an inverted index.

Scores are self-normalised: divided by the best score the query could reach
(sum over its matched terms of qtf * idf * (k1 + 1)), which gives a 0-1 value that
means the same whatever else is in the workspace, so it fuses with cosine scores
without per-query rescaling.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict

from graph.search.text import tokenize

K1 = 1.2
B = 0.75


class LexicalIndex:
    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = defaultdict(dict)
        self._lengths: dict[str, int] = {}
        self._total_length = 0
        self._lock = threading.Lock()

    def add(self, memory_id: str, text: str) -> None:
        counts = Counter(tokenize(text))
        with self._lock:
            if memory_id in self._lengths:
                return
            for term, tf in counts.items():
                self._postings[term][memory_id] = tf
            length = sum(counts.values())
            self._lengths[memory_id] = length
            self._total_length += length

    def __len__(self) -> int:
        return len(self._lengths)

    def search(self, query: str) -> dict[str, float]:
        """memory_id -> normalised BM25 in [0, 1], for memories sharing a query term."""
        query_terms = Counter(tokenize(query))
        with self._lock:
            n = len(self._lengths)
            if not n or not query_terms:
                return {}
            average = self._total_length / n
            scores: dict[str, float] = defaultdict(float)
            attainable = 0.0
            for term, qtf in query_terms.items():
                postings = self._postings.get(term)
                if not postings:
                    continue
                idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
                attainable += qtf * idf * (K1 + 1)
                for memory_id, tf in postings.items():
                    norm = K1 * (1 - B + B * self._lengths[memory_id] / average)
                    scores[memory_id] += qtf * idf * tf * (K1 + 1) / (tf + norm)
        if attainable <= 0:
            return {}
        return {memory_id: score / attainable for memory_id, score in scores.items()}
