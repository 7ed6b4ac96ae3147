"""`make bench --only reconcile` (issue 50): does memory stay true when agents restate and replace
decisions under new topics?

The labelled set (tests/bench/data/reconcile/subjects.json, written before any tuning) is stored
through a real FlowbabyService, the way agents store memories (storeMemory without a topicId), one
phase per day: originals and half the look-alikes; restatements, near-exact repeats and captured
sessions; replacements; the other look-alikes. Then, per split (`tune`, `heldout`, `heldout2`: SPLITS):

- `leftCurrentPct`: the originals, restatements, repeats and sessions whose stored memory is still
  live (Active or DecisionRecord) at the end (target 0 %);
- `lookalikesReplaced`: look-alikes no longer live, or merged into another subject's topic (target 0);
- `replacementFirstPct`: the subject's question ranks the replacement's topic first (target >= 95 %);
- `duplicatesPer100Writes`: live memories of a subject beyond one, per 100 writes;
- `otherSubjectSuperseded`: memories superseded by a decision on another subject's write (target 0; each
  one also counts as not left current).

Each write's staging time (the reply's duration_ms) is reported as p50 / p95. The state is measured
once every decision is applied (`decidedAfterReply`: how many came after their write's reply), so it
does not depend on the machine's load. `main`: the same writes, each with a topicId of its own (not
reconciled, as before reconcile on write).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowbaby.owner_line import call_json

DATA = Path(__file__).resolve().parent / "data" / "reconcile" / "subjects.json"
LIVE = ("Active", "DecisionRecord")
SPLITS = ("tune", "heldout", "heldout2")
DAYS = ("2026-03-02", "2026-04-06", "2026-05-11", "2026-06-15")


@dataclass
class Write:
    subject: str
    split: str
    kind: str  # original | restate | repeat | session | replace | lookalike
    phase: int
    fields: dict[str, Any]
    topic_id: str = ""
    version: int = 0
    memory_id: str = ""
    decision: str = "add"
    target: str = ""
    """The topicId the decision concerns (its candidate), "" for a plain add."""


def plan(data: dict[str, Any]) -> list[Write]:
    """Every write in the order it is stored (phase, then the file's order)."""
    writes: list[Write] = []
    split = {s["id"]: s["split"] for s in data["subjects"]}
    for s in data["subjects"]:
        writes.append(Write(s["id"], s["split"], "original", 0, s["original"]))
        writes.append(Write(s["id"], s["split"], "restate", 1, s["restate"]))
        writes.append(Write(s["id"], s["split"], "replace", 2, s["replace"]))
        when = 0 if s["lookalikeWhen"] == "before" else 3
        writes.append(Write(s["id"], s["split"], "lookalike", when, s["lookalike"]))
    by_id = {s["id"]: s for s in data["subjects"]}
    for subject, which in data["repeats"].items():
        copy = dict(by_id[subject][which])
        copy["decisions"] = [d.rstrip(".") + "." for d in copy["decisions"]]  # the same words, as a second run
        writes.append(Write(subject, split[subject], "repeat", 1 if which == "original" else 2, copy))
    for session in data["sessions"]:
        writes.append(Write(session["subject"], split[session["subject"]], "session", 1, session["memory"]))
    order = {"original": 0, "lookalike": 1, "restate": 2, "session": 3, "replace": 4, "repeat": 5}
    return sorted(writes, key=lambda w: (w.phase, order[w.kind]))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else 0.0


async def _run(root: Path, data: dict[str, Any], reconciled: bool = True) -> dict[str, Any]:
    """`reconciled=False`: each write names a topicId of its own, so nothing is reconciled: the store
    behaves as main did before reconcile on write (every write a topic of its own, all current)."""
    from graph.api import FlowbabyService

    (root / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")  # graph building off: the set is about the store
    service = await FlowbabyService.open(root, log_to_stderr=False, build_graph=False, rate_limit_per_minute=0)
    writes = plan(data)
    staging: list[float] = []
    decisions: dict[str, int] = {}
    late = 0
    try:
        for i, w in enumerate(writes):
            stamp = f"{DAYS[w.phase]}T{9 + i // 60:02d}:{i % 60:02d}:00Z"
            own = {} if reconciled else {"topicId": f"bench-{i}"}
            params = {**w.fields, "agentName": "bench", "metadata": {"createdAt": stamp, **own}}
            reply = await call_json(service, "store_memory", params)
            staging.append(reply["duration_ms"])
            w.topic_id = reply["summary_id"]
            latest = service.store.topic_versions(w.topic_id)[-1]
            w.version, w.memory_id = latest.version, latest.memory_id
            w.decision = (reply.get("reconcile") or {}).get("decision", "add")
            w.target = (reply.get("reconcile") or {}).get("topicId", "")
            late += w.decision == "pending"
        await service.reconciler.settled()  # the state measured is the one after every decision is applied
        logged = {e.newer.memoryId: e for e in service.reconciler.log.entries().values()}
        for w in writes:
            if w.decision == "pending":
                entry = logged.get(w.memory_id)
                w.decision = entry.decision if entry else "add"
                w.target = str((entry.evidence or {}).get("topicId", "")) if entry else ""
            decisions[w.decision] = decisions.get(w.decision, 0) + 1
        crossed = _crossed(writes, list(service.reconciler.log.entries().values()))
        await service.flush_vectors()
        status = {(m.topic_id, m.version): m.status.value for m in service.store.iter_memories()}
        firsts: dict[str, str | None] = {}
        for s in data["subjects"]:
            found = await call_json(service, "retrieve", {"query": s["question"], "maxResults": 3, "abstain": False})
            firsts[s["id"]] = found["entries"][0]["topicId"] if found["entries"] else None
    finally:
        await service.close()
    result: dict[str, Any] = {"writes": len(writes), "decisions": decisions, "decidedAfterReply": late}
    for split in SPLITS:
        result[split] = score([w for w in writes if w.split == split], status, firsts, writes, crossed)
    result["all"] = score(writes, status, firsts, writes, crossed)
    result["stagingMs"] = {"p50": percentile(staging, 0.5), "p95": percentile(staging, 0.95)}
    kind_of = {w.topic_id: f"{w.subject}/{w.kind}" for w in writes if w.decision != "update"}
    result["trace"] = [
        f"{w.split} {w.subject}/{w.kind}: {w.decision}" + (f" {kind_of.get(w.target, w.target)}" if w.target else "")
        for w in writes
    ]
    return result


def _crossed(writes: list[Write], entries: list[Any]) -> set[str]:
    """The writes (memoryIds) a decision on ANOTHER subject's write superseded: a replacement's superseded
    memories, a skip of a repeat of another subject's memory, the versions an update joined. Each is counted
    as no longer left current, so this is the precision a replaced look-alike count alone does not show."""
    subject = {w.memory_id: w.subject for w in writes}
    in_topic: dict[str, list[Write]] = {}
    for w in writes:
        in_topic.setdefault(w.topic_id, []).append(w)
    crossed: set[str] = set()
    for entry in entries:
        if entry.restoredAt is None and entry.newer.memoryId in subject:
            by = subject[entry.newer.memoryId]
            crossed.update(r.memoryId for r in entry.superseded if subject.get(r.memoryId, by) != by)
    for i, w in enumerate(writes):
        others = [o for o in in_topic.get(w.target or w.topic_id, []) if o is not w and o.subject != w.subject]
        if w.decision == "skip" and others and not any(o.subject == w.subject for o in in_topic.get(w.target, [])):
            crossed.add(w.memory_id)
        if w.decision == "update":
            crossed.update(o.memory_id for o in others if writes.index(o) < i)
    return crossed


def score(
    writes: list[Write],
    status: dict[tuple[str, int], str],
    firsts: dict[str, str | None],
    everyone: list[Write],
    crossed: Collection[str] = frozenset(),
) -> dict[str, Any]:
    def live(w: Write) -> bool:
        return status.get((w.topic_id, w.version)) in LIVE

    older = [w for w in writes if w.kind in ("original", "restate", "repeat", "session")]
    replaces = {w.subject: w for w in writes if w.kind == "replace"}
    own_topics = {w.topic_id for w in writes if w.kind != "lookalike"}
    lookalikes = [w for w in writes if w.kind == "lookalike"]
    wrong = [w.subject for w in lookalikes if not live(w) or w.topic_id in own_topics]
    live_topics: dict[str, set[str]] = {}
    for w in writes:
        if w.kind != "lookalike" and live(w):
            live_topics.setdefault(w.subject, set()).add(w.topic_id)
    duplicates = sum(len(topics) - 1 for topics in live_topics.values() if topics)
    first = [firsts.get(s) == w.topic_id for s, w in replaces.items()]
    named = {w.topic_id: f"{w.subject}/{w.kind}" for w in everyone if w.decision != "update"}
    return {
        "subjects": len(replaces),
        "leftCurrentPct": round(100 * sum(map(live, older)) / max(1, len(older)), 1),
        "leftCurrentIds": [f"{w.subject}/{w.kind}" for w in older if live(w)],
        "lookalikesReplaced": len(wrong),
        "lookalikesReplacedIds": wrong,
        "replacementFirstPct": round(100 * sum(first) / max(1, len(first)), 1),
        "notFirst": {
            s: named.get(firsts.get(s) or "", firsts.get(s)) for s, ok in zip(replaces, first, strict=True) if not ok
        },
        "duplicatesPer100Writes": round(100 * duplicates / max(1, len(writes)), 1),
        "otherSubjectSuperseded": sum(w.memory_id in crossed for w in writes),
        "otherSubjectSupersededIds": [f"{w.subject}/{w.kind}" for w in writes if w.memory_id in crossed],
    }


def run_reconcile(root: Path) -> dict[str, Any]:
    os.environ.setdefault("LLM_PROVIDER", "offline")
    data = json.loads(DATA.read_text())
    workspace, unreconciled = root / "ws", root / "main"
    workspace.mkdir()
    unreconciled.mkdir()
    result = asyncio.run(_run(workspace, data))
    before = asyncio.run(_run(unreconciled, data, reconciled=False))
    result["main"] = {split: before[split] for split in (*SPLITS, "all")}
    result["data"] = str(DATA.relative_to(DATA.parents[4]))
    return result
