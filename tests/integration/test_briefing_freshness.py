"""The session briefing marks decisions whose code references changed, moved or went missing
since the memory was written (graph/code/freshness.py over a real git repository); a decision
whose code is as it was is not marked, and nothing is hidden for being stale."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import graph.engine.hooks
from flowbaby.owner_line import call_json
from graph.core.contract import Freshness
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, resolve_workspace
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.integration.test_freshness import LOCK, RECONCILE, WRITTEN, Git


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[FlowbabyService, Git]]:
    git = Git(tmp_path / "repo")
    git.write("billing/reconcile.py", RECONCILE)
    git.write("billing/ledger.py", LOCK)
    git.write("billing/export.py", "EXPORT = 1\n")
    git.commit("Initial billing", "2026-01-01T10:00:00Z")
    paths = resolve_workspace(git.root)
    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None)  # never opened: store only
    yield service, git
    service.store.close()


def decision(topic_id: str, text: str, reference: str) -> dict[str, object]:
    meta = {"topicId": topic_id, "createdAt": WRITTEN, "updatedAt": WRITTEN, "status": "DecisionRecord"}
    return summary(topic_id, topic=topic_id, decisions=[text], references=[reference], metadata=meta)


def test_the_briefing_marks_stale_decisions(service: tuple[FlowbabyService, Git]) -> None:
    flowbaby, git = service
    for topic_id, text, ref in [
        ("reconcile", "Reconcile in batches of 500 rows", "billing/reconcile.py"),
        ("ledger", "Take the ledger lock before writing", "billing/ledger.py"),
        ("export", "Export CSV only", "billing/export.py"),
    ]:
        assert asyncio.run(call_json(flowbaby, "ingest", decision(topic_id, text, ref)))["success"]
    before = asyncio.run(call_json(flowbaby, "briefing", {}))
    assert "stale" not in before["text"] and not any(item.get("stale") for item in before["items"])

    git.write("billing/reconcile.py", RECONCILE + "\n\ndef reconcile_late():\n    pass\n")
    git.commit("Late reconciliation", "2026-01-15T10:00:00Z")
    (git.root / "billing/ledger.py").unlink()
    git.commit("Drop the ledger lock", "2026-01-16T10:00:00Z")

    brief = asyncio.run(call_json(flowbaby, "briefing", {}))
    lines = {line.split(":")[0].removeprefix("- "): line for line in brief["text"].splitlines()}
    assert "(stale: billing/reconcile.py changed)" in lines["reconcile"]
    assert "(stale: billing/ledger.py missing)" in lines["ledger"]  # listed all the same
    assert "stale" not in lines["export"]
    stale = {item["topicId"] for item in brief["items"] if item.get("stale")}
    assert stale == {"reconcile", "ledger"}


def test_a_slow_freshness_check_leaves_the_briefing_unmarked_and_on_time(
    service: tuple[FlowbabyService, Git], monkeypatch: pytest.MonkeyPatch
) -> None:
    flowbaby, git = service
    assert asyncio.run(
        call_json(flowbaby, "ingest", decision("reconcile", "Reconcile in batches", "billing/reconcile.py"))
    )["success"]
    git.write("billing/reconcile.py", RECONCILE + "\n# later\n")
    git.commit("Later", "2026-01-15T10:00:00Z")
    checker = flowbaby._freshness_for(flowbaby.origin)
    real = checker.check_many

    def slow(memories: list[tuple[list[str], str]]) -> list[Freshness]:
        time.sleep(1.0)  # a cold git log of a big repository
        return real(memories)

    monkeypatch.setattr(checker, "check_many", slow)
    monkeypatch.setattr(graph.engine.hooks, "BRIEFING_FRESHNESS_SEC", 0.1)
    started = time.perf_counter()
    brief = asyncio.run(call_json(flowbaby, "briefing", {}))
    assert time.perf_counter() - started < 0.9
    assert "Reconcile in batches [topicId reconcile]" in brief["text"] and "stale" not in brief["text"]
    monkeypatch.setattr(graph.engine.hooks, "BRIEFING_FRESHNESS_SEC", 5.0)
    assert "(stale: billing/reconcile.py changed)" in asyncio.run(call_json(flowbaby, "briefing", {}))["text"]
