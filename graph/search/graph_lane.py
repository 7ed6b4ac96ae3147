"""The graph lane: query entities matched against the graph, and their neighbourhood.

It reads the networkx projection (never cognee's database) and keeps inverted
indexes over it, rebuilt when the projection file changes. Entity weights are
ln(N / df): an entity in every memory (the two speakers of a conversation, the
project's name) carries no weight, a rare component carries a lot.

- seed: memories that mention the query's entities, or entities one relation away
  from them, scored by the weight of what they share with the query;
- expansion: from the best memories of the first pass, through the rare entities
  they mention, to memories that share them (memory -> entity -> memory, two hops),
  weighted by how good a join key the entity is (a ticket or a file path links two
  summaries; a shared date hardly does). This brings back the second memory of a
  multi-hop question.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import defaultdict
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np

from graph.backends.projection import ProjectionSource
from graph.core.contract import FlowbabyError
from graph.core.graph_projection import STRUCTURAL_TYPES, LaneRecords
from graph.extract.extractor import normalise, query_names
from graph.search.links import Hop
from graph.search.supersession import MemoryNames

log = logging.getLogger("flowbaby.graph_lane")

_WORDS = re.compile(r"[\w/.#-]+")
RELATED_DISCOUNT = 0.5
"""A memory reached through a related entity (one relation away) counts half."""
RARE_FRACTION = 0.2
"""Expansion walks only through entities in at most this share of memories."""
JOIN_STRENGTH = {
    "issue": 1.0,
    "file": 1.0,
    "identifier": 1.0,
    "component": 0.7,
    "technology": 0.5,
    "organization": 0.5,
    "concept": 0.2,
    "person": 0.2,
    "place": 0.2,
}
"""How strongly a shared entity of each type links two memories: a ticket, file or
symbol is a join key; a shared date, place or everyday concept hardly is."""
UBIQUITY_FRACTION = 0.5
UBIQUITY_MIN_MEMORIES = 10


def _loose_key(key: str) -> str:
    """A normalised name with '-', '_' and runs of spaces as one space."""
    return " ".join(re.split(r"[-_\s]+", key))


class GraphLane:
    def __init__(self, projection: ProjectionSource) -> None:
        self._source = projection
        self._mtime: object | None = None
        self._lock = threading.Lock()
        self._entity_memories: dict[str, tuple[str, ...]] = {}
        self._memory_entities: dict[str, tuple[str, ...]] = {}
        """Both sorted: ties between equal scores then resolve the same way in every process
        (set order follows string hashes, which differ per process)."""
        self._related: dict[str, set[str]] = {}
        self._by_key: dict[str, set[str]] = {}
        self._structural: set[str] = set()
        self._names: dict[str, str] = {}
        self._types: dict[str, str] = {}
        self._ubiquitous: set[str] = set()
        self._relations: dict[tuple[str, str], set[str]] = {}
        self._memories = 0
        self.damaged = False
        """The projection could not be read: the lane serves an empty graph (an unreadable file or value) or
        the last version it read (a read that raised) until a newer one is saved."""
        self._spellings: dict[str, set[str]] = {}
        """Entities spelled apart only by '-', '_' or spaces ("owner-portal", "owner portal")."""
        self._links: dict[str, tuple[float, float, np.ndarray] | None] = {}
        """expand's per-entity (join strength, rarity, holders), None for an entity that links nothing:
        filled as queries reach entities, emptied with every reload."""
        self._supersession_view: tuple[object | None, list[tuple[str, str, str]], MemoryNames] | None = None
        self._positions: dict[str, int] = {}
        self._ids: list[str] = []
        """seed's numbering of the memories it has reached since the last reload."""
        self._held: dict[str, np.ndarray] = {}
        """seed's holders of an entity as positions, filled as queries reach entities, emptied with every reload."""

    def refresh(self) -> None:
        """Reload the indexes if a worker has saved a new projection."""
        stamp = self._source.stamp()
        if stamp in (None, self._mtime):
            return
        with self._lock:
            try:
                mtime, records = self._source.read_lane()
            except FlowbabyError:
                raise  # the team database's faults: the retrieval answers with their code
            except Exception as exc:  # e.g. a value the database cannot send: search goes on without it
                log.error(
                    "graph projection version %s unreadable (%s: %s); kept the last one read",
                    stamp,
                    type(exc).__name__,
                    exc,
                )
                self.damaged, self._mtime = True, stamp  # read again only once a newer version is saved
                return
            if mtime is None or mtime == self._mtime:
                return
            self.damaged = records is None
            entities, edges, memory_entities, _ = records or LaneRecords([], [], {})
            entity_memories: dict[str, tuple[str, ...]] = {}
            by_key: dict[str, set[str]] = defaultdict(set)
            loose: dict[str, set[str]] = defaultdict(set)
            structural: set[str] = set()
            names: dict[str, str] = {}
            types: dict[str, str] = {}
            for node, name, entity_type, holders in entities:
                entity_memories[node] = holders
                names[node] = name
                types[node] = entity_type
                key = normalise(name)
                by_key[key].add(node)
                loose[_loose_key(key)].add(node)
                if entity_type in STRUCTURAL_TYPES:
                    structural.add(node)
            related: dict[str, set[str]] = defaultdict(set)
            relations: dict[tuple[str, str], set[str]] = defaultdict(set)
            for src, dst, name in edges:
                if src in entity_memories and dst in entity_memories and src != dst:
                    related[src].add(dst)
                    related[dst].add(src)
                    relations[(src, dst)].add(name)
            self._entity_memories, self._memory_entities = entity_memories, memory_entities
            self._related, self._by_key, self._structural = dict(related), dict(by_key), structural
            self._names, self._types, self._relations = names, types, dict(relations)
            self._memories = len(memory_entities)
            self._spellings = {e: group for group in loose.values() if len(group) > 1 for e in group}
            self._ubiquitous = self._find_ubiquitous()
            self._links, self._held, self._positions, self._ids = {}, {}, {}, []
            if records is not None and records.positions is not None:  # a saved lane: positions as read
                self._ids = list(records.positions[0])
                self._positions = {m: i for i, m in enumerate(self._ids)}
                self._held = {entity[0]: at for entity, at in zip(entities, records.positions[1], strict=True)}
            self._mtime = mtime

    def _rare_limit(self) -> float:
        return max(2, RARE_FRACTION * self._memories)

    def _weight(self, entity: str) -> float:
        df = len(self._entity_memories.get(entity, ()))
        return math.log(self._memories / df) if df and self._memories else 0.0

    def query_entities(self, text: str) -> dict[str, float]:
        """Entities of the graph that the text names, with their weights."""
        keys = {normalise(name) for name, kind in query_names(text) if kind not in STRUCTURAL_TYPES}
        words = [w.strip(".,;:!?\"'()") for w in _WORDS.findall(text.lower())]
        for size in (1, 2, 3):
            for start in range(len(words) - size + 1):
                keys.add(normalise(" ".join(words[start : start + size])))
        with self._lock:
            found = {e for key in keys for e in self._by_key.get(key, ()) if e not in self._structural}
            return {e: w for e in sorted(found) if (w := self._weight(e)) > 0}

    def seed(self, entities: dict[str, float], limit: int) -> dict[str, float]:
        """memory_id -> share of the query's entity weight the memory covers, in [0, 1], for the best
        `limit` memories (best first; among equal shares the one reached first), or for every memory
        reached, in the order reached, when there are no more. In arrays: at 1M memories a common
        entity reaches a hundred thousand of them, one dict entry each in plain Python."""
        total = sum(entities.values())
        if total <= 0:
            return {}
        with self._lock:
            rare, reach = self._rare_limit(), []
            for entity, weight in entities.items():
                own = self._holders(entity)
                parts = [own]
                for neighbour in self._related.get(entity, ()):
                    # A relation to a hub (an entity in many memories) says nothing specific.
                    if neighbour in self._structural or len(self._entity_memories.get(neighbour, ())) > rare:
                        continue
                    parts.append(self._holders(neighbour))
                reach.append((weight, len(own), parts))
            scores = np.zeros(len(self._ids))
            first = np.full(len(self._ids), -1, dtype=np.int64)
            reached = 0
            for weight, owned, parts in reach:
                # Each memory once, in the order first reached: the entity's own holders get its weight,
                # those only a related entity reaches get the discounted weight.
                memories, at = np.unique(np.concatenate(parts), return_index=True)
                order = np.argsort(at, kind="stable")
                memories, at = memories[order], at[order]
                new = memories[first[memories] < 0]
                first[new] = np.arange(reached, reached + len(new))
                reached += len(new)
                scores[memories] += np.where(at < owned, weight, weight * RELATED_DISCOUNT)
            found = np.flatnonzero(first >= 0)
            shares = np.minimum(1.0, scores[found] / total)
            if len(found) <= limit:
                picked = np.argsort(first[found], kind="stable")
            else:
                picked = np.lexsort((first[found], -shares))[:limit]
            ids = self._ids
            return {ids[i]: share for i, share in zip(found[picked].tolist(), shares[picked].tolist(), strict=True)}

    def _holders(self, entity: str) -> np.ndarray:
        """The entity's memories as seed's positions (a memory gets one the first time any query reaches it)."""
        held = self._held.get(entity)
        if held is None:
            positions, ids = self._positions, self._ids
            for memory_id in self._entity_memories.get(entity, ()):
                if memory_id not in positions:
                    positions[memory_id] = len(ids)
                    ids.append(memory_id)
            held = self._held[entity] = np.fromiter(
                map(positions.__getitem__, self._entity_memories.get(entity, ())), dtype=np.int32
            )
        return held

    def expand(
        self, seeds: dict[str, float], exclude: set[str], near: Collection[str] = (), strong: float = 0.0
    ) -> dict[str, Hop]:
        """memory_id -> how it is reached two hops from a seed (seed -> rare entity -> memory): the
        seed's relative strength times the link, which is the entity's join strength for its type
        (a ticket or a file is a join key, a shared date hardly is) times its rarity. Only hops of at
        least `strong` or to a memory in `near` are returned (what the retriever can place: at 1M
        memories a rare entity still has thousands of holders). In arrays, as seed."""
        top_seed = max(seeds.values(), default=0.0)
        if top_seed <= 0:
            return {}
        with self._lock:
            links, reach = self._links, []
            for seed, strength in seeds.items():
                for entity in self._memory_entities.get(seed, ()):
                    if entity in exclude:
                        continue
                    if entity not in links:
                        links[entity] = self._link(entity)
                    link = links[entity]
                    if link is None:
                        continue
                    join, rarity, holders = link
                    value = strength / top_seed * join * rarity
                    # one per entity: its holders share it
                    reach.append((value, strength, Hop(value, seed, (self._names[entity],)), holders))
            if not reach:
                return {}
            positions, size = self._positions, len(self._ids)
            seed_strength = np.zeros(size)
            for seed, strength in seeds.items():
                if seed in positions:
                    seed_strength[positions[seed]] = strength
            best = np.zeros(size)
            chosen = np.full(size, -1, dtype=np.int32)
            for k, (value, strength, _, holders) in enumerate(reach):
                # a weaker seed can itself be reached from a stronger one
                taken = holders[(value > best[holders]) & (seed_strength[holders] < strength)]
                best[taken] = value
                chosen[taken] = k
            keep = (chosen >= 0) & (best >= strong)
            near_positions = [positions[m] for m in near if m in positions]
            keep[near_positions] |= chosen[near_positions] >= 0
            ids = self._ids
            return {ids[i]: reach[chosen[i]][2] for i in np.flatnonzero(keep).tolist()}

    def _link(self, entity: str) -> tuple[float, float, np.ndarray] | None:
        """The entity's join strength, rarity and holders (with its other spellings', as seed's positions),
        or None when it links nothing: no join strength, held by one memory, or too common. Query-independent."""
        join = JOIN_STRENGTH.get(self._types.get(entity, ""), 0.0)
        holders = self._holders(entity)
        if entity in self._spellings:
            holders = np.unique(np.concatenate([holders, *(self._holders(e) for e in self._spellings[entity])]))
        if not join or len(holders) > self._rare_limit() or len(holders) < 2:
            return None
        scale = math.log(max(self._memories, 3))
        return join, min(1.0, math.log(self._memories / len(holders)) / scale), holders

    def supersession_inputs(self) -> tuple[object | None, list[tuple[str, str, str]], MemoryNames]:
        """What implicit supersession reads of the graph: the projection's version, its stated
        relations by entity name, and each memory's entity names with their types (read from this
        version's indexes when asked; built once per projection version)."""
        with self._lock:
            if self._supersession_view is not None and self._supersession_view[0] == self._mtime:
                return self._supersession_view
            relations = [
                (self._names[a], name, self._names[b]) for (a, b), names in self._relations.items() for name in names
            ]
            names_of = _LaneNames(
                self._memory_entities, self._entity_memories, self._names, self._types, self._structural
            )
            self._supersession_view = (self._mtime, relations, names_of)
            return self._supersession_view

    def neighbourhood(self, memory_id: str, hops: int) -> dict[str, list[dict[str, Any]]]:
        """What the graph knows around one memory: its entities (and, at 2 hops, the entities
        related to them), the relations among those, and the memories that share them."""
        self.refresh()
        with self._lock:
            entities = set(self._memory_entities.get(memory_id, ()))
            if hops >= 2:
                entities |= {n for e in list(entities) for n in self._related.get(e, ())}
            via: dict[str, set[str]] = defaultdict(set)
            for entity in entities:
                if entity in self._structural:
                    continue
                for other in self._entity_memories.get(entity, ()):
                    if other != memory_id:
                        via[other].add(entity)
            return {
                "entities": [
                    {
                        "id": e,
                        "name": self._names[e],
                        "type": self._types.get(e, ""),
                        "memories": len(self._entity_memories[e]),
                    }
                    for e in sorted(entities, key=lambda e: self._names[e])
                ],
                "relations": [
                    {"source": self._names[a], "target": self._names[b], "relation": name}
                    for (a, b), names in sorted(self._relations.items())
                    if a in entities and b in entities
                    for name in sorted(names)
                ],
                "memories": sorted(
                    (
                        {
                            "memoryId": m,
                            "via": sorted(self._names[e] for e in shared),
                            "weight": round(sum(self._weight(e) for e in shared), 4),
                        }
                        for m, shared in via.items()
                    ),
                    key=lambda item: (-item["weight"], item["memoryId"]),
                ),
            }

    def ubiquitous_words(self) -> set[str]:
        """Words of entities found in most memories (e.g. the speakers), once the workspace
        is large enough for "most" to mean something."""
        with self._lock:
            return self._ubiquitous

    def _find_ubiquitous(self) -> set[str]:
        if self._memories < UBIQUITY_MIN_MEMORIES:
            return set()
        words: set[str] = set()
        for entity, holders in self._entity_memories.items():
            if len(holders) >= UBIQUITY_FRACTION * self._memories and entity not in self._structural:
                words.update(self._names[entity].lower().split())
        return words


class _LaneNames(MemoryNames):
    """One projection version's memory -> {entity name: type} (structural entities left out), read from
    the lane's indexes on demand. refresh replaces those indexes and never changes them, so this keeps
    the version it was made for."""

    def __init__(
        self,
        memory_entities: dict[str, tuple[str, ...]],
        entity_memories: dict[str, tuple[str, ...]],
        names: dict[str, str],
        types: dict[str, str],
        structural: set[str],
    ) -> None:
        self._memory_entities, self._entity_memories = memory_entities, entity_memories
        self._names, self._types, self._structural = names, types, structural
        self._named: dict[str, list[str]] | None = None
        self._order: dict[str, int] | None = None

    def __getitem__(self, memory_id: str) -> dict[str, str]:
        names, types, structural = self._names, self._types, self._structural
        return {names[e]: types.get(e, "") for e in self._memory_entities[memory_id] if e not in structural}

    def __iter__(self) -> Iterator[str]:
        return iter(self._memory_entities)

    def __len__(self) -> int:
        return len(self._memory_entities)

    def holders(self, names: Collection[str]) -> dict[str, list[str]]:
        """Through the entities of each name and their memories, kept only where the memory's own
        entities name it too (what iterating every memory's names finds), in the memories' order."""
        if self._named is None:
            named: dict[str, list[str]] = defaultdict(list)
            for entity, name in self._names.items():
                if entity not in self._structural:
                    named[name].append(entity)
            self._named, self._order = dict(named), {m: i for i, m in enumerate(self._memory_entities)}
        assert self._order is not None
        found: dict[str, list[str]] = {}
        for name in names:
            held = {
                m
                for e in self._named.get(name, ())
                for m in self._entity_memories.get(e, ())
                if e in self._memory_entities.get(m, ())
            }
            if held:
                found[name] = sorted(held, key=self._order.__getitem__)
        return found
