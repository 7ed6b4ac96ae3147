"""Implicit supersession: a newer memory, under another topicId, that replaces what an older one decided.

"Moved the mobile app's offline store from Realm to SQLite" makes the older "keep offline data in
Realm" decision stale, though no one re-saved that topic. The evidence is the graph's stated
relations (the offline extractor's `moved_to` and `replaced_by`: "moved X to Y", "migrated from X
to Y", "X was replaced by Y") and sentences that retire a name ("X was dropped", "we no longer use
X"). A pair is (older, newer) when:

- the newer memory states that X was replaced (and names Y, when the relation has one);
- the older memory, saved earlier under another topicId, decided X: X is in its topic or decisions,
  and it does not already name Y;
- both are live (Active or DecisionRecord).

The inference can be wrong, so nothing is hidden: retrieval ranks the newer one first for
current-state questions and marks the older with `possiblySupersededBy`; a person confirms.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from graph.core.contract import MemoryStatus
from graph.core.memories import Memory
from graph.search.links import name_keys

REPLACING = frozenset({"moved_to", "replaced_by"})
_RETIRE = re.compile(
    r"(?i)\b(?:no longer (?:use[sd]?|using|run[s]?|need[s]?)|dropped|deprecated|retired|shut down|sunset|"
    r"removed|replaced)\b"
)
_MOVED = re.compile(r"(?i)\b(?:mov|migrat|switch|port)(?:e|es|ed|ing|ion)?\b")
_HISTORIC = re.compile(
    r"(?i)\b(?:used to|originally|previously|initially|at first|before (?:we|the)|in the past|old|former|"
    r"did we (?:use|pick|choose)|was (?:it|the)|were we)\b"
)
LIVE = frozenset({MemoryStatus.ACTIVE, MemoryStatus.DECISION_RECORD})
MAX_HOLDERS = 0.05
"""A replaced name held by more than this share of memories (a platform everyone mentions) is
too broad to mark them all stale."""


@dataclass(frozen=True)
class Pair:
    older: str
    newer: str
    replaced: str
    replacement: str
    evidence: str


def is_historic(question: str) -> bool:
    """A question about how things were ("what did we use before") wants the older memory."""
    return bool(_HISTORIC.search(question))


def _pattern(name: str) -> str:
    """A name as a pattern where '-', '_' and a space are the same ("sealed-secrets", "sealed secrets")."""
    parts = [re.escape(p) for p in re.split(r"[-_\s]+", name.strip()) if p]
    return r"(?<![\w-])" + r"[-_\s]+".join(parts) + r"(?![\w-])"


def _mentions(text: str, name: str) -> bool:
    return bool(name.strip()) and bool(re.search(_pattern(name), text, re.IGNORECASE))


_FROM_TO = re.compile(r"(?i)\bfrom\s+((?:[\w.+-]+\s+){0,2}?[\w.+-]+)\s+(?:to|onto|into)\b")


def _retired_names(memory: Memory, names: Iterable[str]) -> dict[str, str]:
    """Names a memory retires in so many words: name -> the sentence. A name inside a longer one
    found at the same place ("Twilio" in "Twilio Video") does not count on its own."""
    found: dict[str, str] = {}
    names = list(names)
    for text in [memory.topic, memory.context, *memory.decisions]:
        for sentence in re.split(r"(?<=[.;!?])\s+", text):
            spans: list[tuple[int, int, str]] = []
            moved = _MOVED.search(sentence)
            from_to = _FROM_TO.search(sentence, moved.end()) if moved else None
            if moved and from_to and from_to.start() - moved.end() <= 40:
                spans.append((from_to.start(1), from_to.end(1), from_to.group(1).lower()))
            cue = _RETIRE.search(sentence)
            for name in names if cue else ():
                assert cue is not None
                match = re.search(_pattern(name), sentence, re.IGNORECASE)
                # "X was dropped" (X just before the cue) or "dropped X", "migrated from X to Y" (just after)
                if match and (0 <= cue.start() - match.end() <= 12 or 0 <= match.start() - cue.end() <= 24):
                    spans.append((match.start(), match.end(), name))
            for start, end, name in spans:
                if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans):
                    found.setdefault(name, sentence.strip())
    return found


_RETIRE_WORDS = ("no longer", "dropped", "deprecated", "retired", "shut down", "sunset", "removed", "replaced")
_MOVED_WORDS = ("mov", "migrat", "switch", "port")
"""Every match of _RETIRE (of _MOVED) starts with one of these, in lower case; _FROM_TO's with "from"."""


def _has_cue(memory: Memory) -> bool:
    """Whether _retired_names can find anything in this memory: a retiring word, or a moving word and a
    "from X to". A match in a sentence is a match in its text (the patterns use only word boundaries),
    so without one it finds nothing whatever the names. An ASCII text is ruled out first by substring
    tests (its case folding is plain lower case), much cheaper than the patterns."""
    text = "\n".join([memory.topic, memory.context, *memory.decisions])
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _RETIRE_WORDS) and not (
            "from" in lowered and any(word in lowered for word in _MOVED_WORDS)
        ):
            return False
    return bool(_RETIRE.search(text) or (_MOVED.search(text) and _FROM_TO.search(text)))


def current_memory(
    memory_id: str,
    links: Mapping[str, list[str]],
    by_id: Mapping[str, Memory],
    newest: Callable[[str], str | None] | None = None,
) -> str | None:
    """The live memory a chain of reconcile decisions leads to (a repeat of a memory replaced since);
    with `newest` (a topic's newest version), through newer versions of a topic too."""
    for _ in range(8):
        memory = by_id.get(memory_id)
        if memory is None:
            return None
        if memory.status in LIVE:
            return memory_id
        newer = links.get(memory_id)
        later = newest(memory.topic_id) if newest is not None and not newer else None
        if not newer and (later is None or later == memory_id):
            return None
        memory_id = newer[-1] if newer else str(later)
    return None


def heirs(
    links: Mapping[str, list[str]], by_id: Mapping[str, Memory], newest: Callable[[str], str | None]
) -> Callable[[str], str | None]:
    """A superseded memory's heir, the live memory that replaced it (reconcile's decisions, then a topic's
    newer versions), which a ranking without superseded memories counts its matches for: a question
    worded like the decision replaced ("the help text width", when the new one says "100 columns") then
    finds the replacement before a live look-alike sharing its words (issue 50's labelled set)."""
    found: dict[str, str | None] = {}

    def heir(memory_id: str) -> str | None:
        if memory_id not in found:
            found[memory_id] = current_memory(memory_id, links, by_id, newest)
        return found[memory_id]

    return heir


class MemoryNames(Mapping[str, dict[str, str]]):
    """memory -> {entity name: type}, and the reverse: which memories hold a name. The graph lane
    answers both from its own indexes without building every memory's dict (~880k memory-name pairs
    at 100k memories, ~1 s), since find_pairs needs the names of few memories and holders of few names."""

    @abstractmethod
    def holders(self, names: Collection[str]) -> dict[str, list[str]]:
        """For each of these names held by any memory: its holders in this mapping's order."""


class NamesDict(MemoryNames):
    """MemoryNames over a plain dict (what a backend without graph indexes, or a test, gives)."""

    def __init__(self, names_of: Mapping[str, dict[str, str]]) -> None:
        self._names_of = names_of

    def __getitem__(self, memory_id: str) -> dict[str, str]:
        return self._names_of[memory_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names_of)

    def __len__(self) -> int:
        return len(self._names_of)

    def holders(self, names: Collection[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        wanted = set(names)
        for memory_id, held in self._names_of.items():
            for name in wanted.intersection(held):
                found.setdefault(name, []).append(memory_id)
        return found


_NO_CUE = -1
"""retired_cache's second key part for a memory without a retiring cue: it retires nothing whatever its names."""


def find_pairs(
    memories: dict[str, Memory],
    relations: Iterable[tuple[str, str, str]],
    names_of: Mapping[str, dict[str, str]],
    retired_cache: dict[tuple[str, int], dict[str, str]] | None = None,
) -> list[Pair]:
    """(older, newer) pairs. relations: (old name, relation, new name) from the graph; names_of:
    memory -> {entity name: type} from the projection. retired_cache keeps each memory's retiring
    sentences between calls (a memory's text never changes), so a new memory costs only its own."""
    cache = {} if retired_cache is None else retired_cache
    indexed = names_of if isinstance(names_of, MemoryNames) else NamesDict(names_of)
    live = {m_id: m for m_id, m in memories.items() if m.status in LIVE}
    replacing = [(old, relation, new) for old, relation, new in relations if relation in REPLACING]
    retiring: list[tuple[str, dict[str, str]]] = []
    for memory_id, memory in live.items():
        if (memory_id, _NO_CUE) in cache:
            continue
        # Without a cue no sentence retires a name: the names (most of this loop's cost) are not needed.
        if not _has_cue(memory):
            cache[(memory_id, _NO_CUE)] = {}
            continue
        key = (memory_id, len(indexed.get(memory_id, {})))
        if key not in cache:
            written = set(indexed.get(memory_id, {})) | name_keys(memory.text())
            cache[key] = _retired_names(memory, written)
        if cache[key]:
            retiring.append((memory_id, cache[key]))
    # Holders only of the names a claim can name (~880k memory-name pairs at 100k memories, few of them needed).
    needed = {name for _, found in retiring for name in found}
    needed.update(name for old, _, new in replacing for name in (old, new))
    holders: dict[str, set[str]] = {}
    for name, held in indexed.holders(needed).items():
        # Built in the mapping's order: the sets iterate as they always did (pairs keep their order).
        if live_held := [m for m in held if m in live]:
            holders[name] = set(live_held)
    limit = max(3, MAX_HOLDERS * len(live))
    stated: dict[str, list[tuple[str, str, str]]] = {}  # newer -> (replaced, replacement, evidence)
    for old, relation, new in replacing:
        for memory_id in holders.get(old, set()) & holders.get(new, set()):
            stated.setdefault(memory_id, []).append((old, new, f"{old} {relation.replace('_', ' ')} {new}"))
    for memory_id, found in retiring:
        for name, sentence in found.items():
            stated.setdefault(memory_id, []).append((name, "", sentence))
    pairs: dict[tuple[str, str], Pair] = {}
    for newer_id, claims in stated.items():
        newer = live[newer_id]
        for old, new, evidence in claims:
            candidates = holders.get(old) or {m for m, o in live.items() if o is not newer and _mentions(o.text(), old)}
            if len(candidates) > limit:
                continue
            for older_id in candidates:
                older = live[older_id]
                if older.topic_id == newer.topic_id or older.created_at >= newer.created_at:
                    continue
                decided = " ".join([older.topic, *older.decisions])
                if not _mentions(decided, old) or (new and _mentions(older.text(), new)):
                    continue
                if _retired_names(older, [old]):
                    continue  # the older one retires it too: not the thing it decided
                pairs.setdefault((older_id, newer_id), Pair(older_id, newer_id, old, new, evidence))
    return sorted(pairs.values(), key=lambda p: (memories[p.newer].created_at, p.older))
