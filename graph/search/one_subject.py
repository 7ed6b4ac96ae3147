"""One memory per subject in what the hooks put before an agent (the briefing, per-prompt recall).

Two current memories are on the same subject when the supersession suggestions pair them (a newer
memory under another topicId replaces what the older decided: graph/search/supersession.py), or
when the newer one states every decision of the older in the same words (a restatement: two
sessions that stored the same decision). Only the newer one is shown; the older costs no budget.
Nothing is changed in the store: retrieval still returns both, the older marked `possiblySupersededBy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from graph.capture.distil import normal
from graph.core.memories import Memory
from graph.search.supersession import Pair

MAX_CACHED = 500_000
"""Memories whose decision keys are kept (a version's text never changes) before the cache starts over."""
_keys_of: dict[str, frozenset[str]] = {}


def _keys(decisions: list[str]) -> frozenset[str]:
    return frozenset(normal(d) for d in decisions) - {""}


def _cached_keys(memory: Memory) -> frozenset[str]:
    found = _keys_of.get(memory.memory_id)
    if found is None:
        if len(_keys_of) >= MAX_CACHED:
            _keys_of.clear()
        found = _keys_of[memory.memory_id] = _keys(memory.decisions)
    return found


def older_ones(memories: list[Memory], pairs: Iterable[Pair]) -> set[str]:
    """The topicIds of current memories a newer current one replaces or restates."""
    by_id = {m.memory_id: m for m in memories}
    hidden = {
        by_id[p.older].topic_id
        for p in pairs
        if p.older in by_id and p.newer in by_id and by_id[p.older].topic_id != by_id[p.newer].topic_id
    }
    return hidden | _restated([(m.topic_id, m.updated_at, _cached_keys(m)) for m in memories])


def _restated(listed: list[tuple[str, str, frozenset[str]]]) -> set[str]:
    """Topics whose every decision a newer topic states too (compared as lower-case words)."""
    holders: dict[str, list[int]] = {}
    for index, (_, _, keys) in enumerate(listed):
        for key in keys:
            holders.setdefault(key, []).append(index)
    hidden = set()
    for index, (topic_id, updated, keys) in enumerate(listed):
        if not keys or any(len(holders[k]) < 2 for k in keys):
            continue  # a decision no other memory states: nothing restates this one
        shared = set.intersection(*(set(holders[k]) for k in keys)) - {index}
        if any((listed[i][1], listed[i][0]) > (updated, topic_id) for i in shared):
            hidden.add(topic_id)
    return hidden


def older_entries(entries: Sequence[Mapping[str, Any]]) -> set[str]:
    """Among retrieval entries: the topicIds another entry replaces (`possiblySupersededBy` names one
    of them) or restates."""
    topics = {str(e.get("topicId") or "") for e in entries}
    replaced = {str(e.get("topicId")) for e in entries if e.get("possiblySupersededBy") in topics}
    return replaced | _restated(
        [
            (str(e.get("topicId") or ""), str(e.get("updatedAt") or ""), _keys(list(e.get("decisions") or [])))
            for e in entries
        ]
    )
