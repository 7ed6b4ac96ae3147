"""Second-hop links through specific names: the join keys of a multi-hop answer.

A "why did X happen" question finds the memory about X; the memory holding the cause
often shares no word with the question, only one specific name with the first memory:
a node pool, a bucket, a flag, a table, a ticket, an error code. The graph lane joins
memories through the extractor's typed entities; this index adds the names themselves as
written (`media-pool`, `legacy_pricing_v1`, `PAW-1432`), with the forms that should meet:

- a wildcard meets what it matches: `pp-*-prod` and `pp-scans-prod`;
- an identifier meets its spoken suffix: `legacy_pricing_v1` and "pricing v1";
- a name meets itself with a head noun: "the pp-scans-prod bucket".

A link's strength is the name's rarity (ln(N/df) over ln(N)): a name in two memories is a
join key, one in a fifth of them is not.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
import threading
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

_NAME = re.compile(r"(?<![\w*/.-])([A-Za-z0-9*]++(?:[-_.][A-Za-z0-9*]++)+|[A-Za-z]++[0-9][A-Za-z0-9]*+)(?![\w*-])")
"""Possessive runs (`++`, `*+`): what follows each run can never be a character of the run (nor can the
lookahead pass on one), so giving characters back could not match more, and is not tried (faster)."""
_VERSIONED = re.compile(r"\b([A-Za-z][a-z]{2,})\s+(v\d+)\b", re.IGNORECASE)
_HAS_VERSION = re.compile(r"[vV]\d")
"""What every _VERSIONED match holds: most texts have none, and a scan for it is five times faster."""
_PARTS = re.compile(r"[-_.]")
_VERSION = re.compile(r"v\d+")
_DATE_OR_NUMBER = re.compile(r"[\d.:/-]+[a-z]?|\d+(st|nd|rd|th|s|am|pm|ms|mb|gb|kb|px|h|m)")
MIN_NAME_CHARS = 5
RARE_FRACTION = 0.05
"""A name in more than this share of memories (and more than two) links nothing."""


class Hop(NamedTuple):
    """How a memory was reached through the graph: link score, the memory it was reached from, and
    the names they share."""

    score: float
    source: str
    names: tuple[str, ...]


def name_keys(text: str) -> set[str]:
    """The specific names a text writes, normalised (lower case, '-', '_' and '.' kept)."""
    keys: set[str] = set()
    for match in _NAME.findall(text):
        keys.update(_match_keys(match))
    if _HAS_VERSION.search(text):
        for word, version in _VERSIONED.findall(text):
            keys.add(f"{word.lower()}_{version.lower()}")
    return keys


@functools.lru_cache(maxsize=1 << 16)
def _match_keys(match: str) -> tuple[str, ...]:
    """The keys one written name gives. Cached: names repeat across a workspace's memories, and the
    catalog reads every memory's names at start."""
    raw = match.strip(".").lower()
    if len(raw) < MIN_NAME_CHARS or _is_date_or_number(raw):
        return ()
    parts = [p for p in _PARTS.split(raw) if p]
    if all(p.isdigit() for p in parts):
        return ()
    # legacy_pricing_v1 -> pricing_v1: the suffix people say aloud
    if len(parts) >= 3 and _VERSION.fullmatch(parts[-1]):
        return raw, f"{parts[-2]}_{parts[-1]}"
    return (raw,)


def is_identifier(name: str) -> bool:
    """A name only a system writes (a file, ticket, error code, versioned or dotted name: a digit, `_`,
    `/` or `.`, or three parts or more), as opposed to a hyphenated phrase ("sci-fi", "must-visit")."""
    return bool(re.search(r"[\d_/.]", name)) or len([p for p in _PARTS.split(name) if p]) >= 3


def _is_date_or_number(raw: str) -> bool:
    return bool(_DATE_OR_NUMBER.fullmatch(raw))


class NameLinks:
    """memory -> names and name -> memories, grown as memories are added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[str, set[str]] = defaultdict(set)
        self._names: dict[str, set[str]] = {}
        self._wildcards: set[str] = set()

    def add(self, memory_id: str, text: str) -> None:
        self._add_keys(memory_id, name_keys(text))

    def _add_keys(self, memory_id: str, keys: set[str]) -> None:
        with self._lock:
            self._names[memory_id] = keys
            for key in keys:
                self._holders[key].add(memory_id)
                if "*" in key:
                    self._wildcards.add(key)

    def export(self) -> list[tuple[str, list[str]]]:
        """Each memory's names, in the order added (graph.search.snapshot keeps them between starts)."""
        with self._lock:
            return [(memory_id, sorted(keys)) for memory_id, keys in self._names.items()]

    def restore(self, names: Iterable[tuple[str, Iterable[str]]]) -> None:
        """Add exported names as `add` adds a text's."""
        for memory_id, keys in names:
            self._add_keys(memory_id, set(keys))

    def _strength(self, df: int, total: int) -> float:
        if df < 2 or total < 3 or df > max(2, RARE_FRACTION * total):
            return 0.0
        return min(1.0, math.log(total / df) / math.log(total))

    def linked(self, memory_id: str) -> dict[str, tuple[float, str]]:
        """Other memories sharing a specific name with this one: memory -> (strength, the name)."""
        with self._lock:
            total = len(self._names)
            out: dict[str, tuple[float, str]] = {}
            for key in sorted(self._names.get(memory_id, ())):  # sorted: the first of equal strengths wins
                groups = [(key, self._holders[key])]
                if "*" in key:  # the wildcard's own holders and every name it matches
                    groups += [(n, h) for n, h in self._holders.items() if "*" not in n and fnmatch.fnmatch(n, key)]
                else:
                    groups += [(w, self._holders[w]) for w in sorted(self._wildcards) if fnmatch.fnmatch(key, w)]
                for name, holders in groups:
                    together = holders if name == key else self._holders[key] | holders
                    strength = self._strength(len(together), total)
                    if not strength:
                        continue
                    label = key if name == key else f"{key} ~ {name}"
                    for other in holders:
                        if other != memory_id and strength > out.get(other, (0.0, ""))[0]:
                            out[other] = (strength, label)
            return out
