"""The graph lane's seed and expansion, computed in arrays, give what the plain loops over every reached
memory gave: the same memories, the same shares and hops to the last bit (seed: in the same order, for
the best `limit`; expansion: the hops the retriever can place)."""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict
from operator import itemgetter

import pytest

from graph.core.graph_projection import LaneRecords, dump_lane, parse_lane
from graph.search.graph_lane import JOIN_STRENGTH, RELATED_DISCOUNT, GraphLane
from graph.search.links import Hop
from tests.support.fakes import FixedLaneRecords


def _graph(rng: random.Random, spelled: bool = False) -> LaneRecords:
    """Entities from a handful of memories to most of them (hubs), some structural, related at random;
    `spelled`: every fifth entity is another spelling of the one before ("name-4" beside "name 4")."""
    memories = [f"m{n:04d}" for n in range(rng.randint(30, 400))]
    entities = []
    for n in range(60):
        held = tuple(sorted(rng.sample(memories, rng.choice([1, 2, 3, 8, 20, len(memories) // 3, len(memories)]))))
        kind = "topic" if n % 13 == 0 else rng.choice(["component", "technology", "file", "concept"])
        name = f"name-{n - 1}" if spelled and n % 5 == 4 else f"name {n}"
        entities.append((f"e{n}", name, kind, held))
    relations = [(f"e{rng.randrange(60)}", f"e{rng.randrange(60)}", "uses") for _ in range(80)]
    memory_entities: dict[str, set[str]] = defaultdict(set)
    for entity, _, _, held in entities:
        for memory_id in held:
            memory_entities[memory_id].add(entity)
    return LaneRecords(entities, relations, {m: tuple(sorted(e)) for m, e in sorted(memory_entities.items())})


def _plain_seed(records: LaneRecords, lane: GraphLane, entities: dict[str, float], limit: int) -> dict[str, float]:
    """The loop seed was before (every reached memory a dict entry), capped as the retriever caps a lane."""
    holders = {e: held for e, _, _, held in records.entities}
    structural = {e for e, _, kind, _ in records.entities if kind == "topic"}
    related = lane._related  # the same sets: the order a memory is first reached follows their order
    rare = max(2, 0.2 * len(records.memory_entities))
    total = sum(entities.values())
    scores: dict[str, float] = defaultdict(float)
    for entity, weight in entities.items():
        reached = {m: weight for m in holders.get(entity, ())}
        for neighbour in related.get(entity, ()):
            if neighbour in structural or len(holders.get(neighbour, ())) > rare:
                continue
            for memory_id in holders[neighbour]:
                reached.setdefault(memory_id, weight * RELATED_DISCOUNT)
        for memory_id, value in reached.items():
            scores[memory_id] += value
    shares = {m: min(1.0, s / total) for m, s in scores.items()}
    return shares if len(shares) <= limit else dict(heapq.nlargest(limit, shares.items(), key=itemgetter(1)))


def _lane(records: LaneRecords, saved: bool) -> GraphLane:
    """`saved`: the records as read back from a saved lane (positions as read) instead of as built."""
    if saved:
        read = parse_lane(dump_lane("stamp", records), "stamp")
        assert read is not None and read.positions is not None
        records = read
    lane = GraphLane(FixedLaneRecords(records))  # type: ignore[arg-type]
    lane.refresh()
    return lane


@pytest.mark.parametrize("saved", [False, True])
@pytest.mark.parametrize("trial", range(40))
def test_seed_in_arrays_is_the_plain_loop_capped_to_its_best(trial: int, saved: bool) -> None:
    rng = random.Random(trial)
    records = _graph(rng)
    lane = _lane(records, saved)
    for _ in range(8):
        picked = rng.sample([e for e, _, kind, _ in records.entities if kind != "topic"], rng.randint(1, 5))
        entities = {e: rng.choice([0.3, 1.0, 2.5, rng.random() * 3]) for e in sorted(picked)}
        for limit in (3, 25, 300):
            got = lane.seed(entities, limit)
            assert list(got.items()) == list(_plain_seed(records, lane, entities, limit).items())


def _plain_expand(
    lane: GraphLane, seeds: dict[str, float], exclude: set[str], near: set[str], strong: float
) -> dict[str, Hop]:
    """The loop expand was before (every holder of every linking entity), then what the retriever kept."""
    hops: dict[str, Hop] = {}
    top_seed = max(seeds.values())
    for seed, strength in seeds.items():
        for entity in lane._memory_entities.get(seed, ()):
            if entity in exclude:
                continue
            join = JOIN_STRENGTH.get(lane._types.get(entity, ""), 0.0)
            holders = set(lane._entity_memories[entity]).union(
                *(lane._entity_memories[e] for e in lane._spellings.get(entity, ()))
            )
            if not join or len(holders) > lane._rare_limit() or len(holders) < 2:
                continue
            rarity = min(1.0, math.log(lane._memories / len(holders)) / math.log(max(lane._memories, 3)))
            value = strength / top_seed * join * rarity
            for memory_id in holders:
                reached = hops.get(memory_id)
                if value > (reached.score if reached else 0.0) and seeds.get(memory_id, 0.0) < strength:
                    hops[memory_id] = Hop(value, seed, (lane._names[entity],))
    return {m: h for m, h in hops.items() if h.score >= strong or m in near}


@pytest.mark.parametrize("saved", [False, True])
@pytest.mark.parametrize("trial", range(40))
def test_expand_in_arrays_is_the_plain_loop_filtered_to_what_can_be_placed(trial: int, saved: bool) -> None:
    rng = random.Random(1000 + trial)
    records = _graph(rng, spelled=True)
    lane = _lane(records, saved)
    memories = sorted(records.memory_entities)
    reached = 0
    for _ in range(8):
        if rng.random() < 0.5:  # seed's positions first for some queries, none for others
            lane.seed({e: 1.0 for e, _, _, _ in rng.sample(records.entities, 3)}, 300)
        seeds = {m: rng.choice([1.0, 0.8, rng.random()]) for m in rng.sample(memories, rng.randint(1, 3))}
        exclude = {e for e, _, _, _ in rng.sample(records.entities, 5)}
        near = set(rng.sample(memories, min(len(memories), 20)))
        for strong in (0.0, 0.5):
            expected = _plain_expand(lane, seeds, exclude, near, strong)
            assert lane.expand(seeds, exclude, near, strong) == expected
            reached += len(expected)
    assert reached  # some hops to compare
