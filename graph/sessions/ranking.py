"""Session search's fusion: the vector lane (cosine of the nearest chunks) and the lexical lane
(self-normalised BM25 of chunks, graph.sessions.lexicon) summed per chunk, turns ranked by their
best chunk plus a share of their better neighbour's, recency as a bounded tie-break, and the
abstention check.

Both lane scores are on a fixed 0-1 scale, as in memory search (graph.search.retrieval), so the
sum means the same across queries and workspaces. Weights and cuts were chosen on BEAM's 500K chats
and a labelled set of coding sessions (tests/bench/sessions_quality.py); the held-out chats were
never read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

LANES = frozenset({"vector", "lexical"})
VECTOR_CANDIDATES = 200
"""Nearest chunks the vector lane hands to fusion."""
LEXICAL_WEIGHT = 2.0
"""Word evidence counts twice a chunk's cosine: transcripts are dense with code, paths and numbers,
where MiniLM sees little. Chosen on BEAM 500K chats 1-3 and the coding set (weights 0.5-5 tried),
checked on chats 4-6: R@5 +3.0 there (28.5 -> 31.5), R@1 -2.6 (15.3 -> 12.7)."""
NEIGHBOUR_WEIGHT = 0.4
"""A turn also counts this share of the better of its two neighbours' own fused scores (the turns
just before and after it in its session). An answer and the question it answers, or a decision and
the turns that argue it, sit side by side in a transcript; a turn whose neighbour also matches is
more likely the place being asked about than a lone turn with one matching phrase. Chosen on the
first two batches of BEAM 500K chats 1-17 (0.2-0.6 tried; R@5 +1.5) and checked on chats 18-35
(+7.6) and on whole chats 9-14 (+0.6; tests/bench/sessions_quality.py, docs/measurements.md)."""
RECENCY_WEIGHT = 0.003
"""The most recency adds to a 0-1 score: enough to order near-ties newest first, never to bury a match."""
RECENCY_HALF_LIFE_DAYS = 30.0
ABSTAIN_VECTOR = 0.4
ABSTAIN_LEXICAL = 0.5
"""A query abstains when none of the best five turns has a chunk this close (cosine) or words this
well matched (BM25 share times the share of the query's term weight the sessions know, so words no
session holds count against it). Lower than the memories' cuts (0.5, 0.6): a 480-character chunk of
a transcript is further from any question than a memory's sentence. Chosen on the coding set and
BEAM 500K chats 1-3 (tests/bench/sessions_quality.py)."""
WEAK_CANDIDATES = 2


@dataclass
class TurnHit:
    key: str
    message_id: str
    best_chunk: str
    chunk_index: int
    created_ms: int
    text: str
    similarity: float | None
    """Cosine of the shown chunk (None: it has no vector yet, a partial index)."""
    fused: float = 0.0
    vector: float = 0.0
    """The turn's best chunk cosine (0 when no chunk is among the vector lane's candidates)."""
    lexical: float = 0.0
    lanes: set[str] = field(default_factory=set)
    score: float = 0.0


def fuse(
    nearest: list[tuple[str, str, float]],
    lexical: dict[str, tuple[str, float]],
    similarities: dict[str, float],
    rows: dict[str, dict[str, object]],
    lanes: frozenset[str] = LANES,
    neighbours: Callable[[str, str], tuple[str, ...]] | None = None,
) -> list[TurnHit]:
    """Turns best first. `nearest`: the vector lane's (key, chunk, cosine); `lexical`: chunk ->
    (key, BM25 share); `similarities`: the cosine of lexical hits outside `nearest`; `rows`: the
    chunks' bookkeeping rows (message_id, chunk_index, created_ms, text); `neighbours`: (key, message
    id) -> the message ids of the turns beside it (graph.sessions.turn_order), None: no neighbour
    evidence."""
    cosine: dict[str, float | None] = dict(similarities)
    key_of: dict[str, str] = {}
    in_vector: set[str] = set()
    if "vector" in lanes:
        for key, eid, similarity in nearest:
            cosine[eid], key_of[eid] = similarity, key
            in_vector.add(eid)
    words: dict[str, float] = {}
    if "lexical" in lanes:
        for eid, (key, share) in lexical.items():
            words[eid], key_of[eid] = share, key
    turns: dict[tuple[str, str], TurnHit] = {}
    best: dict[tuple[str, str], float] = {}
    for eid, key in key_of.items():
        row = rows.get(eid)
        if row is None:
            continue
        sim = cosine.get(eid)
        chunk = (max(sim, 0.0) if sim is not None and "vector" in lanes else 0.0) + LEXICAL_WEIGHT * words.get(eid, 0.0)
        turn = (key, str(row["message_id"]))
        hit = turns.get(turn)
        if hit is None:
            hit = turns[turn] = TurnHit(
                key, turn[1], eid, int(str(row["chunk_index"])), int(str(row["created_ms"])), str(row["text"]), sim
            )
            best[turn] = -1.0
        if eid in in_vector:
            hit.lanes.add("vector")
            hit.vector = max(hit.vector, sim or 0.0)
        if eid in words:
            hit.lanes.add("lexical")
            hit.lexical = max(hit.lexical, words[eid])
        index = int(str(row["chunk_index"]))
        if chunk > best[turn] or (chunk == best[turn] and index < hit.chunk_index):
            best[turn] = chunk
            hit.best_chunk, hit.chunk_index, hit.text, hit.similarity = eid, index, str(row["text"]), sim
        hit.fused = best[turn]
    ranked = list(turns.values())
    weight = (1.0 if "vector" in lanes else 0.0) + (LEXICAL_WEIGHT if "lexical" in lanes else 0.0)
    if neighbours is not None:
        own = {turn: hit.fused for turn, hit in turns.items()}
        for (key, message_id), hit in turns.items():
            beside = max((own.get((key, other), 0.0) for other in neighbours(key, message_id)), default=0.0)
            hit.fused += NEIGHBOUR_WEIGHT * beside
        weight *= 1.0 + NEIGHBOUR_WEIGHT  # the score stays within 0-1
    newest = max((h.created_ms for h in ranked), default=0)
    for hit in ranked:
        age_days = max(0, newest - hit.created_ms) / 86_400_000
        recency = RECENCY_WEIGHT * math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
        hit.score = round(min(1.0, max(0.0, hit.fused / weight + recency)), 6) if weight else 0.0
    ranked.sort(key=lambda h: (-h.score, -h.created_ms, h.key, h.message_id))
    return ranked


def abstain_reason(ranked: list[TurnHit], known_share: float = 1.0) -> str | None:
    """Why no turn is about the query, or None (nothing found at all is an empty result).
    `known_share`: the share of the query's term weight on words some chunk holds."""
    if not ranked:
        return None
    head = ranked[:5]
    vector = max(h.vector for h in head)
    lexical = max(h.lexical for h in head) * known_share
    if vector < ABSTAIN_VECTOR and lexical < ABSTAIN_LEXICAL:
        return (
            f"no session turn is close to the query (best chunk match {vector:.2f} < {ABSTAIN_VECTOR}, "
            f"best word match {lexical:.2f} < {ABSTAIN_LEXICAL})"
        )
    return None
