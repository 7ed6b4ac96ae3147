"""Fused retrieval: vector, lexical and graph lanes, status and recency rules, token budget.

The fusion is a calibrated sum of lane scores that are each already on a fixed
0-1 scale (cosine, self-normalised BM25, entity-weight share), so no per-query
rescaling is needed and the final score means the same across queries. Past the
first two places, the vector lane's own picks alternate with the sum's. Weights
were chosen on the LoCoMo dev half with leave-one-conversation-out checks (see
the retrieval issue's note); the round values were what every fold picked.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import NamedTuple, Protocol

import numpy as np

from graph.code.branches import Ancestry, Checkout
from graph.code.freshness import FreshnessChecker
from graph.core.contract import (
    NO_FRESHNESS,
    FlowbabyContextRequest,
    Freshness,
    MemoryStatus,
    RetrievalEntry,
)
from graph.core.memories import Memory
from graph.core.text import tokenize
from graph.extract.extractor import query_names
from graph.search.catalog import Catalog
from graph.search.links import Hop, is_identifier
from graph.search.supersession import Pair, current_memory, find_pairs, heirs, is_historic
from graph.search.token_budget import count_tokens, truncate_to_tokens

LANES = frozenset({"vector", "lexical", "graph"})

SECOND_CHUNK_WEIGHT = 0.5
"""A memory's vector score is its best chunk plus half its second best: two facts
matching beat one, which lifts multi-fact (multi-hop) answers."""
COVERAGE_FLOOR = 0.5
COVERAGE_WEIGHT = 2.0
"""The vector lane's own ranking also adds twice every further chunk's cosine above 0.5: a session
holding several facts about the question (the answers of a list question) beats one close sentence."""
FUSED_HEAD = 2
"""The fused ranking keeps its first two places; from the third on, every other place goes to the
vector lane's own best memory not yet listed. A memory that paraphrases the question ("pottery" for
"activities") shares no word with it and loses the sum to any memory repeating a query word, yet
multi-hop questions need such memories from several sessions (LoCoMo dev multi-hop R@5 67.8 -> 72.7
in leave-one-conversation-out checks, overall R@5 88.5 -> 88.8, R@1 unchanged)."""
LEXICAL_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
GRAPH_SEED_WEIGHT = 0.1
GRAPH_EXPANSION_WEIGHT = 0.5
HINT_WEIGHT = 0.25
EXPANSION_SEEDS = 3
SEED_SHARE = 0.6
"""The graph expands from the best three direct matches, those within this share of the best."""
EXPANSION_GATE = 0.4
"""A memory reached through a weak link must also be somewhat close to the question (best
chunk cosine at least this): the graph links it, the question still has to be about it."""
TIE_BREAK = 0.1
OFF_TIME = 0.8
"""When the question names a month, a linked memory created outside it and the month before counts
0.8 of its link."""
STRONG_LINK = 0.5
STRONG_PER_SEED = 2
"""A link at least this strong (seed strength relative to the best seed, times the shared name's
type and rarity) places a memory right after its seed with no closeness gate, at most two per seed."""
SEED_LINK = 0.7
"""A direct match among the seeds is placed after a stronger seed only through a link this strong
and through an identifier both write (a ticket or a file, e.g. the incident and the rollout that fixed
it), never through a hyphenated phrase or a person's name: on LoCoMo dev, moves through "sci-fi" or
"must-visit" cost multi-hop R@5 (72.5 -> 72.2)."""
DECISION_RECORD_BOOST = 0.02
RECENCY_WEIGHT = 0.003
"""The most recency can add: enough to order near-ties newest first, never enough to
bury an older memory that is clearly the relevant one."""
VECTOR_CANDIDATES = 1000
LANE_CANDIDATES = 300
"""Each lexical or graph lane contributes its best this many memories: a memory outside
every lane's top 300 cannot reach the top 50 of the fusion."""
ABSTAIN_VECTOR = 0.4
ABSTAIN_COVERAGE = 0.4
"""The first sign, no memory is close: none of the best five has a vector score of 0.4 or holds 40 % of
the query's content words (stop words out, stemmed). The word evidence is the share of the query's
words one memory holds, not the lane's BM25, which is normalised over the words that matched: a
memory sharing only "drivers" with "How are driver tips paid out?" scored a full word match (0.74).
Chosen on the dev folds of the Pawpoint set and the Dockwise set (tests/bench/abstain_set.json) inside
a plateau (vector cut 0.35-0.4, word share 0.3-0.5), with LoCoMo dev as the guard (none abstains):
false abstentions 4 -> 2 of 58 on the dev folds and 5 -> 4 of 57 on the check folds, true
abstentions 15 -> 16 of 27 and 15 of 27 unchanged (the earlier cuts were 0.5 and a BM25 of 0.6)."""
WORDS_CACHE = 4096
"""Memories whose word sets the retriever keeps for abstention's word coverage (about 50 words each)."""
ABSTAIN_UNKNOWN_VECTOR = 0.7
ABSTAIN_AMBIGUOUS_VECTOR = 0.56
ABSTAIN_MARGIN = 0.06
ABSTAIN_COVERED_LEXICAL = 0.25
"""The third sign, no match stands out: the best vector score is below 0.56, the runner-up is within
0.06 of it, and the best word match times the share of the query's term weight the workspace knows
(LexicalIndex.known_share) is below 0.25. An answer that shares no word with its question still stands
out from the rest; a question about something the workspace never recorded, on a topic it knows
("dental charts" in a vet clinic's memories), matches several memories equally weakly. Chosen on the
Pawpoint dev set, the same cuts on both folds, inside a plateau (margin 0.06-0.07, word cut 0.2-0.3),
with LoCoMo dev as the guard: a vector cut of 0.62 catches 0.70 of the dev set's unanswerable questions
but abstains on an answerable LoCoMo question (R@5 -0.13)."""
SPECIFIC_TYPES = frozenset({"technology", "identifier", "issue", "file"})
"""Entity types that name one specific thing: a query naming one that no memory holds is about
something the workspace has no memory of."""
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+")
"""An entity written as an acronym (GDPR, SLA, DNA) names one specific thing too, whatever type the
offline extractor gives it (mostly "concept"): on the Pawpoint dev set it lifts unanswerable questions
returning nothing from 0.60 to 0.70 on each fold, and no LoCoMo dev question names an acronym its
conversation never writes."""
MISSING_PENALTY = 0.02
"""A memory every code reference of which is gone ranks this much lower (as much as a DecisionRecord
gains): below an equally relevant memory whose code still holds, never hidden."""
UNMERGED_PENALTY = 0.01
"""A memory made on a branch the reader's checkout does not contain ranks this much lower: the current
branch and its ancestors come first among equals; nothing is hidden."""
FRESHNESS_WINDOW = 5
"""Places past maxResults whose freshness is checked before packing, so a demoted memory's place
can go to the next one."""
WEAK_CANDIDATES = 2
"""Memories an abstained answer still lists, flagged weak, so an agent can judge for itself."""
MATCH_FLOOR = {"vector": 0.3, "lexical": 0.2, "graph": 0.2}
"""Below all of these a memory is not a match at all (an unrelated query returns nothing)."""


@dataclass(slots=True)
class Scored:
    memory: Memory
    lanes: dict[str, float] = field(default_factory=dict)
    fused: float = 0.0
    score: float = 0.0
    via: Hop | None = None
    """Set when the graph placed this memory: the memory it was reached from and the names shared."""
    superseded_by: str | None = None
    """The topicId of a newer memory that seems to replace this one (implicit supersession)."""


def summary_text(memory: Memory) -> str:
    """The memory as an agent reads it: compact markdown-ish text, every field kept."""
    parts = [memory.topic, memory.context]
    for title, items in (
        ("Decisions", memory.decisions),
        ("Rationale", memory.rationale),
        ("Open questions", memory.open_questions),
        ("Next steps", memory.next_steps),
        ("References", memory.references),
    ):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


_MONTH_NAMES = "january february march april may june july august september october november december"
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES.split(), 1)}  # noqa: SIM905
_MONTH_WORD = re.compile(r"(?i)\b(" + "|".join(_MONTHS) + r")\b")


def query_months(query: str) -> set[int]:
    """Months a question names ("since early March", "in September"), with the month before each:
    a cause is often logged a little before the effect is noticed. "may" counts only capitalised."""
    months: set[int] = set()
    for match in _MONTH_WORD.finditer(query):
        if match.group(0) == "may" or match.group(0) == "MAY":
            continue
        month = _MONTHS[match.group(0).lower()]
        months |= {month, 12 if month == 1 else month - 1}
    return months


def _strip_words(query: str, words: set[str]) -> str:
    """The query without the given words (and their possessives); the query itself if nothing is left."""
    if not words:
        return query
    tokens = re.findall(r"[\w'\-]+|[^\w\s]", query)
    kept = [t for t in tokens if re.sub(r"('s|\u2019s)$", "", t.lower()) not in words]
    text = re.sub(r"\s+([?.,!])", r"\1", " ".join(kept))
    text = re.sub(r"\b(and|both)\s+(?=(and|both)\b)", "", text).strip()
    return text or query


class TextEncoder(Protocol):
    """What the vector lane needs of the embedder (graph.search.embedder.Embedder): normalised vectors."""

    def encode(self, texts: list[str]) -> list[list[float]]: ...


class ChunkIndex(Protocol):
    """What the vector lane needs of the chunk index (graph.backends.embedded.vectors.VectorIndex)."""

    def count(self) -> int: ...

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]: ...


class GraphSearch(Protocol):
    """What the graph lanes need of graph.search.graph_lane.GraphLane."""

    def refresh(self) -> None: ...

    def ubiquitous_words(self) -> set[str]: ...

    def query_entities(self, text: str) -> dict[str, float]: ...

    def seed(self, entities: dict[str, float], limit: int) -> dict[str, float]: ...

    def expand(
        self, seeds: dict[str, float], exclude: set[str], near: Collection[str] = (), strong: float = 0.0
    ) -> dict[str, Hop]: ...

    def supersession_inputs(self) -> tuple[object | None, list[tuple[str, str, str]], Mapping[str, dict[str, str]]]: ...


class Retriever:
    """Typed against small Protocols so the unit tier can rank with in-process fakes."""

    def __init__(
        self,
        catalog: Catalog,
        embedder: TextEncoder,
        graph: GraphSearch,
        vectors: Callable[[], ChunkIndex],
        replaced_by: Callable[[], Mapping[str, list[str]]] | None = None,
    ) -> None:
        """`replaced_by`: older memoryId -> the memoryIds a reconcile decision replaced it with
        (graph.backends.decision_log), ranked like the implicit supersession pairs."""
        self.catalog = catalog
        self._replaced_by = replaced_by
        self.embedder = embedder
        self.graph = graph
        self._vectors = vectors
        self._pairs_lock = threading.Lock()
        self._pairs_key: tuple[object | None, int, int] | None = None
        self._pairs: list[Pair] = []
        self._retired: dict[tuple[str, int], dict[str, str]] = {}
        self.freshness: FreshnessChecker | None = None
        """Checks returned memories' code references (graph.code.freshness); None: not checked."""
        self.ancestry: Ancestry | None = None
        """Tells whether a memory's commit is in the reader's checkout (graph.code.branches)."""
        self._words: dict[str, frozenset[str]] = {}

    def _memory_words(self, memory: Memory) -> frozenset[str]:
        """memory_words, kept for the WORDS_CACHE memories abstention checked last (a version's text
        never changes): tokenising five long memories is about 1 ms a query, a cache hit nothing."""
        words = self._words.get(memory.memory_id)
        if words is None:
            if len(self._words) >= WORDS_CACHE:
                self._words.clear()
            words = self._words[memory.memory_id] = memory_words(memory)
        return words

    # -- lanes ----------------------------------------------------------------------
    def _vector_lane(
        self, query: str, hints: str
    ) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, float]]:
        """(fused vector score, best chunk cosine, hint score, coverage score) per memory."""
        stripped = _strip_words(query, self.graph.ubiquitous_words())
        texts = list(dict.fromkeys([query, stripped] + ([hints] if hints else [])))
        vectors = dict(zip(texts, np.asarray(self.embedder.encode(texts), dtype=np.float32), strict=False))
        # The question plus the question without names found everywhere (e.g. the two
        # speakers of a conversation), which would otherwise dominate its embedding.
        combined = vectors[query] + vectors[stripped]
        combined /= max(float(np.linalg.norm(combined)), 1e-9)
        index = self._vectors()
        limit = min(VECTOR_CANDIDATES, index.count())
        best: dict[str, list[float]] = {}
        for memory_id, similarity in index.search(combined.tolist(), limit):
            chunks = best.get(memory_id)
            if chunks is None:
                best[memory_id] = [similarity]
            else:
                chunks.append(similarity)
        fused: dict[str, float] = {}
        top: dict[str, float] = {}
        coverage: dict[str, float] = {}
        for m, s in best.items():  # one pass: ~700 memories a query at 10k
            top[m] = s[0]
            score = fused[m] = s[0] + SECOND_CHUNK_WEIGHT * (s[1] if len(s) > 1 else 0.0)
            coverage[m] = (
                score + COVERAGE_WEIGHT * sum(max(0.0, x - COVERAGE_FLOOR) for x in s[2:]) if len(s) > 2 else score
            )
        hint_scores: dict[str, float] = {}
        if hints:
            for memory_id, similarity in index.search(vectors[hints].tolist(), limit):
                hint_scores.setdefault(memory_id, max(0.0, similarity))
        return fused, top, hint_scores, coverage

    # -- ranking ----------------------------------------------------------------------
    def rank(self, request: FlowbabyContextRequest, lanes: frozenset[str] = LANES) -> list[Scored]:
        """Every matching visible memory, best first, with its 0-1 score."""
        hints = " ".join(request.contextHints)
        by_id = self.catalog.by_id
        if not by_id:
            return []
        candidates: dict[str, Scored] = {}
        if lanes & {"vector", "graph"}:
            # Before the vector lane, which strips the graph's ubiquitous words from the query: read
            # after it, the first query of a process saw none and ranked unlike every later one.
            self.graph.refresh()

        include_superseded = request.includeSuperseded
        # an agent's user-scope proposal is no one's memory until the person accepts it
        superseded, proposed = MemoryStatus.SUPERSEDED, MemoryStatus.PROPOSED
        links = None if include_superseded or self._replaced_by is None else self._replaced_by()
        heir = None if links is None else heirs(links, by_id, self.catalog.newest)

        def lane(name: str, scores: dict[str, float]) -> None:
            if len(scores) > LANE_CANDIDATES:
                scores = dict(heapq.nlargest(LANE_CANDIDATES, scores.items(), key=itemgetter(1)))
            # _candidate inlined: about a thousand lane hits a query at 10k memories
            for memory_id, value in scores.items():
                memory = by_id.get(memory_id)
                if memory is None or value <= 0 or memory.status is proposed:
                    continue
                if memory.status is superseded and not include_superseded:
                    # its match counts for the live memory that replaced it, if any (supersession.heirs)
                    memory_id = (heir(memory_id) if heir is not None else None) or ""
                    memory = by_id.get(memory_id)
                    if memory is None:
                        continue
                item = candidates.get(memory_id)
                if item is None:
                    item = candidates[memory_id] = Scored(memory)
                item.lanes[name] = max(value, item.lanes.get(name, 0.0))

        best_chunk: dict[str, float] = {}
        coverage: dict[str, float] = {}
        if "vector" in lanes:
            vector, best_chunk, hinted, coverage = self._vector_lane(request.query, hints)
            if heir is not None:
                for memory_id, value in list(best_chunk.items()):
                    found = by_id.get(memory_id)
                    to = heir(memory_id) if found is not None and found.status is superseded else None
                    if to:
                        best_chunk[to] = max(value, best_chunk.get(to, 0.0))
            lane("vector", vector)
            lane("hint", hinted)
        if "lexical" in lanes:
            lane(
                "lexical", self.catalog.lexical.search(request.query + (" " + hints if hints else ""), LANE_CANDIDATES)
            )
        entities: dict[str, float] = {}
        if "graph" in lanes:
            entities = self.graph.query_entities(request.query)
            for entity, weight in self.graph.query_entities(hints).items() if hints else ():
                entities.setdefault(entity, weight * 0.5)
            lane("graph_seed", self.graph.seed(entities, LANE_CANDIDATES))

        total_weight = (
            LEXICAL_WEIGHT
            + VECTOR_WEIGHT * (1 + SECOND_CHUNK_WEIGHT)
            + GRAPH_SEED_WEIGHT
            + GRAPH_EXPANSION_WEIGHT
            + (HINT_WEIGHT if hints else 0.0)
        )
        floor_vector, floor_lexical, floor_graph = MATCH_FLOOR["vector"], MATCH_FLOOR["lexical"], MATCH_FLOOR["graph"]
        matches = []
        for item in candidates.values():  # the fused sum and the match test in one pass
            get = item.lanes.get
            lexical, graph_seed = get("lexical", 0.0), get("graph_seed", 0.0)
            item.fused = (
                LEXICAL_WEIGHT * lexical
                + VECTOR_WEIGHT * get("vector", 0.0)
                + GRAPH_SEED_WEIGHT * graph_seed
                + HINT_WEIGHT * get("hint", 0.0)
            )
            if (
                best_chunk.get(item.memory.memory_id, 0.0) >= floor_vector
                or lexical >= floor_lexical
                or graph_seed >= floor_graph
            ):
                matches.append(item)
        if "graph" in lanes and matches:
            matches = self._second_hop(
                request.query, matches, candidates, entities, best_chunk, total_weight, "vector" in lanes
            )

        self._final_scores(matches, total_weight, request.halfLifeDays)
        # (-score, created_at, memory_id) as three stable sorts on C-level keys (reverse=True keeps ties' order)
        matches.sort(key=attrgetter("memory.memory_id"))
        matches.sort(key=attrgetter("memory.created_at"))
        matches.sort(key=attrgetter("score"), reverse=True)
        if "vector" in lanes and len(lanes) > 1:
            matches = self._interleave_vector_picks(matches, coverage)
        if "graph" in lanes:
            matches = self._newer_first(matches, request)
        return matches

    def _unknown_names(self, query: str) -> list[str]:
        """Specific names the query writes that no memory contains."""
        return [
            name
            for name, kind in query_names(query)
            if (kind in SPECIFIC_TYPES or _ACRONYM.fullmatch(name)) and not self.catalog.lexical.knows(name)
        ]

    def supersession_pairs(self, refresh: bool = True) -> list[Pair]:
        """Implicit supersession pairs over the whole workspace, cached per projection and catalog size.
        `refresh=False` within a ranking, which has refreshed the graph once already."""
        if refresh:
            self.graph.refresh()
        version, relations, names_of = self.graph.supersession_inputs()
        key = (version, len(self.catalog), self.catalog.changes)
        with self._pairs_lock:
            if self._pairs_key != key:
                self._pairs = find_pairs(self.catalog.by_id, relations, names_of, self._retired)
                self._pairs_key = key
            return self._pairs

    def _newer_first(self, ranked: list[Scored], request: FlowbabyContextRequest) -> list[Scored]:
        """An older memory that a newer one (another topicId) seems to replace is marked, and for a
        current-state question the newer one is placed right before it, even if it did not match."""
        replaced: dict[str, list[str]] = defaultdict(list)
        for pair in self.supersession_pairs(refresh=False):
            replaced[pair.older].append(pair.newer)
        by_id = self.catalog.by_id
        if self._replaced_by is not None:  # reconcile's decisions: the older one is Superseded, so in no pair
            links = self._replaced_by()
            for older, newer in links.items():
                replaced[older].extend(live for m in newer if (live := current_memory(m, links, by_id)))
        if not any(replaced.values()):
            return ranked
        order = list(ranked)
        historic = is_historic(request.query)
        for item in ranked:
            newer_ids = replaced.get(item.memory.memory_id)
            if not newer_ids:
                continue
            newest = max(newer_ids, key=lambda m: (by_id[m].created_at, m))
            item.superseded_by = by_id[newest].topic_id
            if historic:
                continue
            position = order.index(item)
            current = next((s for s in order if s.memory.memory_id == newest), None)
            if current is None:
                current = Scored(by_id[newest], lanes={"graph_supersession": 1.0}, score=item.score)
            elif order.index(current) < position:
                continue
            else:
                order.remove(current)
            current.score = max(current.score, item.score)
            order.insert(position, current)
        return order

    def _second_hop(
        self,
        query: str,
        matches: list[Scored],
        candidates: dict[str, Scored],
        entities: dict[str, float],
        best_chunk: dict[str, float],
        total_weight: float,
        has_vector: bool,
    ) -> list[Scored]:
        """Memory -> specific shared name -> memory, from the best few direct matches. A strong link
        (a rare, specific name) places the reached memory right after the one it was reached from,
        however little it resembles the question: it is the cause the question cannot name. A weak
        link only adds to a memory that is itself somewhat close to the question."""
        first_pass = heapq.nsmallest(EXPANSION_SEEDS, matches, key=lambda s: (-s.fused, s.memory.memory_id))
        top = first_pass[0].fused
        seeds = {s.memory.memory_id: s.fused / total_weight for s in first_pass if s.fused >= SEED_SHARE * top}
        # Only what can be placed below: a strong link, or a memory close to the question.
        close = [m for m, cosine in best_chunk.items() if cosine >= EXPANSION_GATE] if has_vector else []
        hops = self.graph.expand(seeds, set(entities), close, STRONG_LINK if has_vector else 0.0)
        strongest = max(seeds.values())
        for seed, strength in seeds.items():
            for other, (link, name) in self.catalog.links.linked(seed).items():
                value = strength / strongest * link
                if seeds.get(other, 0.0) < strength and value > hops.get(other, Hop(0.0, "", ())).score:
                    hops[other] = Hop(value, seed, (name,))
        by_id = self.catalog.by_id
        months = query_months(query)
        if months:  # "since early March": a linked memory from that time is the likelier cause
            hops = {
                m: h._replace(score=h.score * (1.0 if self.catalog.created[m].month in months else OFF_TIME))
                for m, h in hops.items()
                if m in self.catalog.created
            }
        matched = {s.memory.memory_id for s in matches}
        margin = (DECISION_RECORD_BOOST + RECENCY_WEIGHT + 1e-6) * total_weight
        placed: dict[str, int] = defaultdict(int)
        # Only strong links and memories close to the question can be placed; strongest link first,
        # among equal links the memory closer to the question, then by id (the same in every process).
        usable = [
            (m, h)
            for m, h in hops.items()
            if h.score >= STRONG_LINK or best_chunk.get(m, 0.0) >= EXPANSION_GATE or not has_vector
        ]
        order = sorted(usable, key=lambda kv: (-(kv[1].score + TIE_BREAK * best_chunk.get(kv[0], 0.0)), kv[0]))
        for memory_id, hop in order:
            memory = by_id.get(memory_id)
            if memory is None or memory.status is MemoryStatus.PROPOSED:
                continue
            if memory.status is MemoryStatus.SUPERSEDED and memory_id not in candidates:
                continue
            near = best_chunk.get(memory_id, 0.0) >= EXPANSION_GATE or not has_vector
            strong = hop.score >= STRONG_LINK and placed[hop.source] < STRONG_PER_SEED
            if not (near or strong) or (memory_id in seeds and not _moves_seed(hop)):
                continue  # a weaker seed moves only through a very strong link from a stronger one
            item = _candidate(candidates, memory)
            item.lanes["graph_expansion"] = hop.score
            # At most right after the memory it was reached from, whatever boost or recency it gets later.
            ceiling = candidates[hop.source].fused - margin * (1 + placed[hop.source])
            lifted = item.fused + GRAPH_EXPANSION_WEIGHT * hop.score
            if strong and item.fused < ceiling:  # a memory already ranked that high uses no placement
                lifted = max(lifted, ceiling)
                placed[hop.source] += 1
            if min(lifted, ceiling) > item.fused:
                item.fused = min(lifted, ceiling)
                item.via = hop
            matched.add(memory_id)
        return [s for s in candidates.values() if s.memory.memory_id in matched]

    @staticmethod
    def _interleave_vector_picks(ranked: list[Scored], coverage: dict[str, float]) -> list[Scored]:
        """The fused head, then the vector lane's next pick and the fused next pick in turn (vector ties
        keep the fused order). A memory the graph reached from a better match is not pushed back by
        a vector pick: it is the multi-hop answer the vector lane cannot see. A memory placed early
        shows the score of the place it took, so scores still read best first."""
        by_vector = iter(sorted(ranked, key=lambda s: -coverage.get(s.memory.memory_id, 0.0)))
        rest = ranked[FUSED_HEAD:]
        order = ranked[:FUSED_HEAD]
        placed = {s.memory.memory_id for s in order}
        next_fused, vector_turn, total = 0, True, len(ranked)
        while len(order) < total:
            while rest[next_fused].memory.memory_id in placed:
                next_fused += 1
            graph_reached = "graph_expansion" in rest[next_fused].lanes
            if vector_turn and not graph_reached:
                item = next(by_vector)  # the vector lane's best not yet placed
                while item.memory.memory_id in placed:
                    item = next(by_vector)
            else:
                item = rest[next_fused]
            order.append(item)
            placed.add(item.memory.memory_id)
            vector_turn = graph_reached or not vector_turn  # a graph-reached memory does not use up the vector turn
        for earlier, later in zip(reversed(order[:-1]), reversed(order[1:]), strict=False):
            earlier.score = max(earlier.score, later.score)
        return order

    def _final_scores(self, matches: list[Scored], total_weight: float, half_life_days: float) -> None:
        """Relevance share, plus a DecisionRecord nudge and a bounded recency tie-break, rounded to
        6 places. Recency is additive and capped (never a multiplier), relative to the newest match.
        One loop for all matches (hundreds per query at 10k memories)."""
        created = self.catalog.created_us
        stamps = [created[s.memory.memory_id] for s in matches]
        if not stamps:
            return
        newest = max(stamps)
        decision, power = MemoryStatus.DECISION_RECORD, math.pow
        for item, stamp in zip(matches, stamps, strict=True):
            score = item.fused / total_weight
            if item.memory.status is decision:
                score += DECISION_RECORD_BOOST
            age_days = (newest - stamp) / 1_000_000 / 86400  # exactly timedelta.total_seconds() / 86400
            score += RECENCY_WEIGHT * power(0.5, (age_days if age_days > 0.0 else 0.0) / half_life_days)
            item.score = round(1.0 if score > 1.0 else score if score > 0.0 else 0.0, 6)

    # -- packing ----------------------------------------------------------------------
    def retrieve(
        self,
        request: FlowbabyContextRequest,
        lanes: frozenset[str] = LANES,
        reader: Checkout | None = None,
        freshness: FreshnessChecker | None = None,
    ) -> Retrieved:
        """Entries packed into maxResults and maxTokens, the tokens they use, and why nothing was
        returned when the retriever abstained. `reader`: the caller's git checkout, against which
        memories made on other branches are marked unmerged; `freshness`: the checker of the caller's
        folder (default: self.freshness, the workspace's)."""
        checker = freshness or self.freshness
        entries: list[RetrievalEntry] = []
        used = 0
        ranked = self.rank(request, lanes)
        reason = (
            abstain_reason(
                ranked,
                self._unknown_names(request.query),
                self.catalog.lexical.known_share(request.query),
                word_coverage(request.query, [s.memory for s in ranked[:5]], self._memory_words),
            )
            if request.abstain and lanes == LANES
            else None
        )
        if reason:
            head = ranked[:WEAK_CANDIDATES]
            checked = self._check_freshness(head, checker)
            weak = [
                self._entry(
                    item,
                    *_fitted(item, request.maxTokens),
                    checked[item.memory.memory_id],
                    self._unmerged(item.memory, reader),
                    weak=True,
                )
                for item in head
            ]
            return Retrieved([], 0, reason, weak)
        window = ranked[: request.maxResults + FRESHNESS_WINDOW]
        fresh = self._check_freshness(window, checker)
        unmerged = {s.memory.memory_id for s in window if self._unmerged(s.memory, reader)}
        penalties = {
            s.memory.memory_id: MISSING_PENALTY * _all_gone(fresh[s.memory.memory_id])
            + UNMERGED_PENALTY * (s.memory.memory_id in unmerged)
            for s in window
        }
        ranked = demote(window, penalties) + ranked[len(window) :]
        for item in ranked:
            if len(entries) >= request.maxResults:
                break
            text = summary_text(item.memory)
            tokens = count_tokens(text)
            if used + tokens > request.maxTokens:
                if entries:
                    continue  # a smaller, lower-ranked memory may still fit
                text = truncate_to_tokens(text, request.maxTokens)
                tokens = count_tokens(text)
                if not text:
                    break
            used += tokens
            memory = item.memory
            entries.append(
                self._entry(
                    item,
                    text,
                    tokens,
                    fresh.get(memory.memory_id) or self._check_freshness([item], checker)[memory.memory_id],
                    memory.memory_id in unmerged or self._unmerged(memory, reader),
                )
            )
        return Retrieved(entries, used, None)

    def _entry(
        self, item: Scored, text: str, tokens: int, freshness: Freshness, unmerged: bool, weak: bool = False
    ) -> RetrievalEntry:
        memory = item.memory
        return RetrievalEntry(
            summaryText=text,
            topic=memory.topic,
            context=memory.context,
            topicId=memory.topic_id,
            planId=memory.plan_id,
            sessionId=memory.session_id,
            createdAt=memory.created_at,
            updatedAt=memory.updated_at,
            status=memory.status,
            version=memory.version,
            memoryId=memory.memory_id,
            score=item.score,
            decisions=memory.decisions,
            tokens=tokens,
            lanes=sorted(
                {name.split("_")[0] for name in item.lanes if name != "hint"}
                | ({"hints"} if "hint" in item.lanes else set())
            ),
            via=describe_hop(item.via, self.catalog.by_id) if item.via else None,
            possiblySupersededBy=item.superseded_by,
            freshness=freshness,
            branch=memory.branch,
            commit=memory.commit,
            unmerged=unmerged,
            weak=weak,
        )

    def _unmerged(self, memory: Memory, reader: Checkout | None) -> bool:
        if reader is None or self.ancestry is None or not memory.commit:
            return False
        return self.ancestry.merged(memory.commit, reader) is False

    @staticmethod
    def _check_freshness(items: list[Scored], checker: FreshnessChecker | None) -> dict[str, Freshness]:
        if checker is None:
            return {item.memory.memory_id: NO_FRESHNESS for item in items}
        checked = checker.check_many([(i.memory.references, i.memory.updated_at, i.memory.commit) for i in items])
        return {item.memory.memory_id: f for item, f in zip(items, checked, strict=True)}


def _fitted(item: Scored, max_tokens: int) -> tuple[str, int]:
    """The memory's text cut to the budget, and its tokens."""
    text = summary_text(item.memory)
    if count_tokens(text) > max_tokens:
        text = truncate_to_tokens(text, max_tokens)
    return text, count_tokens(text)


class Retrieved(NamedTuple):
    entries: list[RetrievalEntry]
    tokens: int
    abstained: str | None
    weak: list[RetrievalEntry] = []
    """When abstained: the best WEAK_CANDIDATES memories anyway, flagged `weak`."""


def demote(window: list[Scored], penalties: dict[str, float]) -> list[Scored]:
    """Memories whose every code reference is gone (in git) lose MISSING_PENALTY, those made on an
    unmerged branch UNMERGED_PENALTY; each moves below the places that then score higher, so
    scores still read non-increasing."""
    ordered = list(window)
    for item in [s for s in window if penalties.get(s.memory.memory_id)]:
        item.score = round(max(0.0, item.score - penalties[item.memory.memory_id]), 6)
        at = ordered.index(item)
        while at + 1 < len(ordered) and ordered[at + 1].score > item.score:
            ordered[at], ordered[at + 1] = ordered[at + 1], ordered[at]
            at += 1
    return ordered


def _all_gone(freshness: Freshness) -> bool:
    """Every code reference missing, as git sees it: on the mtime basis (no repository) a path that
    is not there may simply live elsewhere, so it is shown but not demoted."""
    return freshness.state == "missing" and freshness.basis == "git"


def _candidate(candidates: dict[str, Scored], memory: Memory) -> Scored:
    """The memory's entry, made on first use (not setdefault: that builds a Scored per lane hit,
    then drops it)."""
    item = candidates.get(memory.memory_id)
    if item is None:
        item = candidates[memory.memory_id] = Scored(memory)
    return item


def _moves_seed(hop: Hop) -> bool:
    return hop.score >= SEED_LINK and any(is_identifier(name) for name in hop.names)


def describe_hop(hop: Hop, by_id: dict[str, Memory]) -> str:
    names = ", ".join(f"`{name}`" for name in hop.names)
    source = by_id[hop.source].topic_id if hop.source in by_id else hop.source
    return f"reached from `{source}` through {names}"


def memory_words(memory: Memory) -> frozenset[str]:
    """The memory's distinct words as the lexical lane indexes them (its fields' text, no headings)."""
    return frozenset(tokenize(memory.text()))


def word_coverage(
    query: str, memories: list[Memory], words_of: Callable[[Memory], frozenset[str]] = memory_words
) -> float:
    """The largest share of the query's distinct content words (graph.core.text.tokenize: stop words
    out, stemmed) that one of the memories holds; 1.0 for a query with no content word."""
    words = set(tokenize(query))
    if not words:
        return 1.0
    return max((len(words & words_of(m)) / len(words) for m in memories), default=0.0)


def abstain_reason(
    ranked: list[Scored], unknown: list[str], known_share: float = 1.0, coverage: float = 1.0
) -> str | None:
    """Why no memory is about the query, or None. Three signs, calibrated on the dev folds of the
    Pawpoint and Dockwise sets against LoCoMo dev (none of its answerable questions may abstain):
    none of the best five has a close sentence and none holds a good share of the query's words
    (`coverage`, word_coverage of the best five); or the query names a specific thing (a technology,
    identifier, ticket or file) that no memory contains, and no memory is very close; or no match
    stands out (weak, nearly tied vector scores and weak word evidence once the query's unknown words
    are counted)."""
    head = ranked[:5]
    if not head:
        return None  # nothing matched at all: an empty result, not an abstention
    vector = max(s.lanes.get("vector", 0.0) for s in head)
    lexical = max(s.lanes.get("lexical", 0.0) for s in head)
    if vector < ABSTAIN_VECTOR and coverage < ABSTAIN_COVERAGE:
        return (
            f"no memory is close to the query (best sentence match {vector:.2f} < {ABSTAIN_VECTOR}, "
            f"at most {coverage:.0%} of its words in one memory < {ABSTAIN_COVERAGE:.0%})"
        )
    if unknown and vector < ABSTAIN_UNKNOWN_VECTOR:
        return f"no memory mentions {', '.join(unknown)} (best sentence match {vector:.2f})"
    scores = sorted((s.lanes.get("vector", 0.0) for s in head), reverse=True) + [0.0]
    covered = lexical * known_share
    if (
        vector < ABSTAIN_AMBIGUOUS_VECTOR
        and scores[0] - scores[1] < ABSTAIN_MARGIN
        and covered < ABSTAIN_COVERED_LEXICAL
    ):
        return (
            f"no memory stands out (best sentence match {vector:.2f}, runner-up {scores[1]:.2f}; "
            f"word match {covered:.2f} counting the query's words no memory holds)"
        )
    return None
