"""The log of reconcile decisions: what each automatic (or a person's) decision changed, with its
evidence, so that getMemory and the browser can show it and `restore` can undo it. It lives where the
memories live (opened by graph.backends.backend.Backend.decision_log): the embedded backend's sealed
`.flowbaby/reconcile.jsonl` (graph.backends.embedded.decision_log), the team backend's namespace table
`reconcile_log` (graph.backends.team.decision_log), so every server of a namespace shows and undoes the
same decisions.

A record is a decision (`id`, `at`, `decision`, `decidedBy`, `reason`, `newer` {topicId, memoryId},
`superseded` [{topicId, memoryId, status}], `evidence`, `suggestions`, `continues`?), or an undo (`id`,
`restoredAt`). What the engine reads of them (a topic's decisions, the topics a late update continues,
which memory replaced which) is derived here once, over whichever store keeps them.
"""

from __future__ import annotations

import json
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from graph.core.contract import utc_now


class Ref(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    topicId: str
    memoryId: str
    status: str = "Active"
    """Its status before the decision (what restore gives back)."""


class Entry(BaseModel):
    """One decision as logged (unknown keys ignored, strings never coerced)."""

    model_config = ConfigDict(extra="ignore", strict=True)
    id: str
    at: str
    decision: str
    decidedBy: str
    reason: str = ""
    newer: Ref
    superseded: list[Ref] = []
    evidence: dict[str, Any] | None = None
    suggestions: list[dict[str, Any]] = []
    continues: str | None = None
    """A late update's: the topic the new memory would have joined (its versions count as the new topic's)."""
    restoredAt: str | None = None

    def shown(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def fold(records: Iterable[Any], before: dict[str, Entry] | None = None) -> dict[str, Entry]:
    """Decisions by id, in the records' order, each with its undo time: an undo record sets the
    `restoredAt` of the decision before it; a record that is neither is skipped. `before`: the decisions
    of the records before these (a new dict is made; their entries are not changed)."""
    found: dict[str, Entry] = dict(before or {})
    for data in records:
        if isinstance(data, dict) and "restoredAt" in data and "decision" not in data:
            if isinstance(data.get("id"), str) and data["id"] in found:
                found[data["id"]] = found[data["id"]].model_copy(update={"restoredAt": str(data["restoredAt"])})
            continue
        try:
            entry = Entry.model_validate(data)
        except ValidationError:
            continue
        found[entry.id] = entry
    return found


def forgotten_marks(topic_ids: set[str], memory_ids: set[str], ascii_only: bool = False) -> list[str]:
    """What a record that names a forgotten topic or version holds in its JSON text: a topic as a JSON
    string (its id is also a word of others), a memory id as it is. `ascii_only`: the records' JSON
    escapes every other character."""
    return [json.dumps(t, ensure_ascii=ascii_only) for t in sorted(topic_ids)] + sorted(memory_ids)


class DecisionLog(ABC):
    """Appends decisions and undos; reads them back whole (`entries`, kept by each store until it changes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._continues: tuple[dict[str, Entry], dict[str, list[Entry]]] | None = None
        self._replaced: tuple[dict[str, Entry], dict[str, list[str]]] | None = None

    @abstractmethod
    def _append(self, record: dict[str, Any]) -> None:
        """Keep one record after every other."""

    @abstractmethod
    def entries(self) -> dict[str, Entry]:
        """Every decision by id, oldest first, with its undo time when it was undone (the same dict
        while nothing changed: what is derived from it is kept by identity)."""

    @abstractmethod
    def forget(self, topic_ids: set[str], memory_ids: set[str]) -> int:
        """Drop every record that names a forgotten topic or version (a decision's evidence holds its
        topic and a sentence of the new memory), and the undos of those decisions. Records dropped."""

    def adopt(self) -> int:
        """`flowbaby adopt`: records kept for another folder made this one's (the embedded file's seals);
        how many. Nothing to do where the log is not the folder's."""
        return 0

    @abstractmethod
    def close(self) -> None:
        """Let go of what the log holds open."""

    def add(self, entry: dict[str, Any]) -> Entry:
        """Log a decision; its id and time are given here."""
        record = Entry.model_validate({"id": "rc_" + uuid.uuid4().hex[:16], "at": utc_now(), **entry})
        self._append(record.model_dump(mode="json", exclude={"restoredAt"}))
        return record

    def restored(self, entry_id: str) -> str:
        at = utc_now()
        self._append({"id": entry_id, "restoredAt": at})
        return at

    def continued(self, topic_id: str) -> list[str]:
        """The topics a topic continues (late updates not undone), oldest first."""
        entries = self.entries()
        with self._lock:
            if self._continues is None or self._continues[0] is not entries:
                joined: dict[str, list[Entry]] = {}
                for entry in entries.values():
                    if entry.continues:
                        joined.setdefault(entry.newer.topicId, []).append(entry)
                self._continues = (entries, joined)
            found = self._continues[1].get(topic_id, [])
        return [e.continues for e in found if e.continues and e.restoredAt is None]

    def replaced_by(self) -> dict[str, list[str]]:
        """Older memoryId -> the memoryIds that replaced it by a decision not undone (a skipped repeat:
        the memory it repeats), for retrieval to rank the current one first (graph.search.retrieval)."""
        entries = self.entries()
        with self._lock:
            if self._replaced is not None and self._replaced[0] is entries:
                return self._replaced[1]
        links: dict[str, list[str]] = {}
        for entry in entries.values():
            if entry.restoredAt is not None:
                continue
            if entry.decision == "replace":
                for ref in entry.superseded:
                    links.setdefault(ref.memoryId, []).append(entry.newer.memoryId)
            elif entry.decision == "skip" and isinstance((entry.evidence or {}).get("memoryId"), str):
                links.setdefault(entry.newer.memoryId, []).append(str((entry.evidence or {})["memoryId"]))
        with self._lock:
            self._replaced = (entries, links)
        return links

    def for_topic(self, topic_id: str) -> list[Entry]:
        """Decisions whose new memory or a superseded one is of this topic."""
        return [
            e
            for e in self.entries().values()
            if e.newer.topicId == topic_id or any(ref.topicId == topic_id for ref in e.superseded)
        ]
