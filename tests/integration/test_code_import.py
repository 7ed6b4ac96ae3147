"""`flowbaby import adr` and `import docs` as a user runs them (subprocesses), then a real bridge:
the imported decisions answer questions with the newest decision first and the superseded ones
hidden; importing twice adds nothing; a changed ADR imported while a bridge owns the workspace
(through the owner) becomes a new version."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "adr"
UNTHROTTLED = ["--rate-limit-per-minute", "0"]


def flowbaby(*args: str, cwd: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    done = run_flowbaby(*args, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def topics(reply: dict[str, Any]) -> list[str]:
    assert reply["success"], reply
    return [entry["topicId"] for entry in reply["entries"]]


def test_nygard_adrs_answer_with_the_newest_decision_and_hide_the_superseded(
    spawn: Callable[..., BridgeClient], workspace: Path
) -> None:
    shutil.copytree(FIXTURES / "nygard", workspace / "doc/adr")
    first = flowbaby("import", "adr", "--workspace", str(workspace), cwd=workspace)  # finds doc/adr itself
    assert (first["added"], first["updated"], first["unchanged"]) == (6, 0, 0)
    again = flowbaby("import", "adr", "doc/adr", "--workspace", ".", cwd=workspace)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 6)
    # Alone, the imports started no cognee worker (it writes worker.log as it starts): the graph
    # work waits, pending, for the finisher (none here: FLOWBABY_FINISH_SEC=0) or the next owner.
    assert not (workspace / ".flowbaby" / "logs" / "worker.log").exists()
    status = flowbaby("status", "--json", "--workspace", str(workspace), cwd=workspace)
    assert status["background"]["counts"] == {"pending": 6} and status["index"]["counts"]["vectors"] == 6

    client = spawn(workspace, *UNTHROTTLED, env={**os.environ, "FLOWBABY_BUILD_GRAPH": "0"})  # reads no graph
    reply = client.result("retrieveMemory", {"query": "Which database stores the ledger?", "maxResults": 5})
    found = topics(reply)
    assert found[0] == "adr-0004"  # CockroachDB, the decision in force
    assert "adr-0002" not in found and "adr-0003" not in found  # MySQL and PostgreSQL: superseded
    entry = reply["entries"][0]
    assert entry["status"] == "DecisionRecord"
    assert entry["freshness"]["basis"] == "mtime"  # not a repository
    assert entry["freshness"]["references"][0]["state"] == "current"
    assert "**References:** `doc/adr/0004-store-the-ledger-in-cockroachdb.md` current" in reply["markdown"]
    history = topics(
        client.result(
            "retrieveForAgent",
            {"query": "Which database stores the ledger?", "maxResults": 5, "includeSuperseded": True},
        )
    )
    assert {"adr-0002", "adr-0003", "adr-0004"} <= set(history)
    rejected = client.result("retrieveForAgent", {"query": "GraphQL gateway for the mobile app"})
    assert rejected["entries"][0]["topicId"] == "adr-0006"
    assert rejected["entries"][0]["topic"].startswith("ADR-0006 (Rejected): ")

    # the owner (this bridge) takes the re-import: ADR 5 is accepted again
    soap = workspace / "doc/adr/0005-expose-a-soap-api-to-partners.md"
    soap.write_text(soap.read_text().replace("Deprecated", "Accepted"))
    third = flowbaby("import", "adr", "--workspace", str(workspace), cwd=workspace)
    assert (third["added"], third["updated"], third["unchanged"]) == (0, 1, 5)
    now = client.result("retrieveForAgent", {"query": "SOAP endpoint for partners"})["entries"][0]
    assert (now["topicId"], now["version"], now["status"]) == ("adr-0005", 2, "DecisionRecord")


def test_madr_adrs_and_design_docs(spawn: Callable[..., BridgeClient], workspace: Path) -> None:
    shutil.copytree(FIXTURES / "madr", workspace / "docs/decisions")
    (workspace / "docs/design.md").write_text(
        "# Session service design\n\n## Token refresh\n\nAccess tokens are refreshed by the gateway "
        "five minutes before they expire.\n\n## Rate limits\n\nEach tenant gets 300 requests a minute.\n"
    )
    adr = flowbaby("import", "adr", "--workspace", str(workspace), cwd=workspace)
    assert (adr["added"], adr["skipped"]) == (7, [])
    docs = flowbaby("import", "docs", "docs/design.md", "--workspace", ".", cwd=workspace)
    assert docs["added"] == 2
    assert flowbaby("import", "docs", "docs/design.md", cwd=workspace)["unchanged"] == 2

    client = spawn(workspace, *UNTHROTTLED, env={**os.environ, "FLOWBABY_BUILD_GRAPH": "0"})  # reads no graph
    found = topics(client.result("retrieveForAgent", {"query": "Where are sessions cached?", "maxResults": 5}))
    assert found[0] == "adr-0004"  # Valkey
    assert "adr-0002" not in found and "adr-0003" not in found  # Memcached, Redis
    refresh = client.result("retrieveForAgent", {"query": "When are access tokens refreshed?"})["entries"][0]
    assert refresh["topicId"] == "doc:docs/design.md#token-refresh"
    assert [r["reference"] for r in refresh["freshness"]["references"]] == [
        "docs/design.md",
        "docs/design.md#token-refresh",
    ]
