"""`make bench --only reconcile_recall` (issue 50): does reconcile on write cost recall?

LoCoMo dev (../shared/bench/README.md's mapping: one ingestForAgent per session) and the
software-memory devset (tests/support/fixtures/devmem_pawpoint.json) are each stored twice through a
real FlowbabyService, graph building off: once with the named topicIds the other benches use (never
reconciled), once without them, so every write is reconciled (add / update / replace / skip) as an
agent's is. The same questions are asked of both, with the same parameters as those benches
(maxResults 10, maxTokens 100000, includeSuperseded true). A returned entry counts for the request it
was stored from (by its memoryId), so a session merged into another topic or stored `Superseded` is
found only if retrieval still returns that version.

Reported per variant: LoCoMo session R@1/3/5/10 (and per category), the devset's metrics
(tests.bench.devset.score), and the reconcile decisions taken. Without the graph lane in both variants
(it needs the background graph), so the numbers are below the full LoCoMo bench's.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from flowbaby.owner_line import call_json
from tests.bench.devset import DEVSET, load_devset, score
from tests.bench.locomo import DEFAULT_DATA, load_conversations, session_recall
from tests.bench.reconcile import percentile

QUERY = {"maxResults": 10, "maxTokens": 100000, "includeSuperseded": True}


async def _store_and_ask(
    root: Path, requests: list[dict[str, Any]], questions: list[str], reconciled: bool
) -> tuple[list[list[str]], dict[str, int], list[float]]:
    """Each question's ranking as the requests' own topicIds, the decisions taken, and the staging times."""
    from graph.api import FlowbabyService

    root.mkdir(parents=True)
    (root / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    service = await FlowbabyService.open(root, log_to_stderr=False, build_graph=False, rate_limit_per_minute=0)
    origin: dict[str, str] = {}  # memoryId -> the request's own topicId
    decisions: dict[str, int] = {}
    taken: dict[str, str] = {}
    staging: list[float] = []
    try:
        for request in requests:
            own = request["metadata"]["topicId"]
            meta = {k: v for k, v in request["metadata"].items() if reconciled is False or k != "topicId"}
            reply = await call_json(service, "ingest", {**request, "agentName": "bench", "metadata": meta})
            origin[reply["ingestion_metrics"]["memoryId"]] = own
            staging.append(1000 * reply["staging_duration_sec"])
            taken[reply["ingestion_metrics"]["memoryId"]] = (reply.get("reconcile") or {}).get("decision", "named")
        await service.reconciler.settled()
        logged = {e.newer.memoryId: e.decision for e in service.reconciler.log.entries().values()}
        for memory_id, decision in taken.items():  # a decision made after its reply, as it was applied
            settled = logged.get(memory_id, "add") if decision == "pending" else decision
            decisions[settled] = decisions.get(settled, 0) + 1
        await service.flush_vectors()
        ranked = []
        for question in questions:
            found = await call_json(service, "retrieve", {"query": question, **QUERY})
            ranked.append([origin.get(e["memoryId"], e["topicId"]) for e in found["entries"]])
    finally:
        await service.close()
    return ranked, decisions, staging


def _variants(root: Path, requests: list[dict[str, Any]], questions: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, reconciled in (("named topics", False), ("reconciled", True)):
        ranked, decisions, staging = asyncio.run(
            _store_and_ask(root / name.replace(" ", "-"), requests, questions, reconciled)
        )
        out[name] = {
            "ranked": ranked,
            "decisions": decisions,
            "stagingMs": {"p50": percentile(staging, 0.5), "p95": percentile(staging, 0.95)},
        }
    return out


def run_reconcile_recall(root: Path, locomo: Path = DEFAULT_DATA) -> dict[str, Any]:
    os.environ.setdefault("LLM_PROVIDER", "offline")
    result: dict[str, Any] = {"loadavg": os.getloadavg()[0]}
    requests, questions = load_devset(DEVSET)
    runs = _variants(root / "devset", requests, [q["question"] for q in questions])
    result["devset"] = {name: {"scores": score(questions, run.pop("ranked")), **run} for name, run in runs.items()}
    if not locomo.is_file():
        result["locomo"] = {"skipped": f"no data at {locomo}"}
        return result
    per_variant: dict[str, dict[str, Any]] = {}
    asked: list[dict[str, Any]] = []
    for conversation in load_conversations(locomo):
        qs = conversation["questions"]
        asked += qs
        runs = _variants(root / conversation["sample"], conversation["requests"], [q["question"] for q in qs])
        for name, run in runs.items():
            into = per_variant.setdefault(name, {"ranked": [], "decisions": {}, "stagingMs": []})
            into["ranked"] += run["ranked"]
            into["stagingMs"].append(run["stagingMs"])
            for decision, count in run["decisions"].items():
                into["decisions"][decision] = into["decisions"].get(decision, 0) + count
    result["locomo"] = {
        name: {"questions": len(asked), "recall": session_recall(run.pop("ranked"), asked), **run}
        for name, run in per_variant.items()
    }
    return result
