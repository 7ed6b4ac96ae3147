"""`flowbaby migrate`: a workspace built by a real bridge on the embedded store is copied into a
namespace of a real Postgres 18 (every version, status and timestamp, same memory ids); a second
run copies nothing; a bridge on that namespace rebuilds the graph and retrieves what the original did."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from graph.backends.team.schema import schema_name
from tests.conftest import summary
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
COLUMNS = (
    "memory_id, topic_id, version, status, topic, context, decisions, rationale, open_questions, next_steps, refs, "
    "time_scope, agent_name, session_id, plan_id, created_at, updated_at, staged_at, char_count"
)
QUERIES = ("Redis cache TTL", "why did we pick Postgres for billing", "deploy freeze on Fridays")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_MAX_QUEUED": "50", **extra}


def _migrate(workspace: Path, url: str, namespace: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "migrate", "--workspace", str(workspace)]
        + ["--to", url, "--namespace", namespace, "--json"],
        capture_output=True,
        env=_env(),
        timeout=300,
        check=False,
    )


def _seed(client) -> None:
    client.result("ingestForAgent", summary())
    client.result("ingestForAgent", summary(decisions=["Use Redis with a 60 minute TTL"]))  # v1 superseded
    client.result(
        "ingestForAgent",
        summary(
            "billing-db",
            topic="Billing database choice",
            context="Billing moved to Postgres because ledger reconciliation needs transactions across tables.",
            decisions=["Postgres 16 for the billing ledger"],
            rationale=["Serializable transactions for reconcile.py"],
            metadata={**summary()["metadata"], "topicId": "billing-db", "status": "DecisionRecord"},
        ),
    )
    client.result(
        "ingestForAgent",
        summary(
            "deploy-freeze",
            topic="Deploy freeze",
            context="No deploys on Fridays after the billing outage; hotfixes need two approvals.",
            decisions=["Freeze deploys from Friday noon"],
            metadata={**summary()["metadata"], "topicId": "deploy-freeze", "createdAt": "2025-04-02T09:00:00Z"},
        ),
    )


def _ranked(client) -> list[list[tuple[str, int, str]]]:
    return [
        [
            (e["topicId"], e["version"], e["status"])
            for e in client.result("retrieveForAgent", {"query": q, "maxResults": 5, "includeSuperseded": True})[
                "entries"
            ]
        ]
        for q in QUERIES
    ]


def test_migrate_copies_every_version_and_the_namespace_serves_them(
    spawn,
    serve,  # noqa: F811
    postgres: PostgresServer,
    tmp_path: Path,
) -> None:
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    original = spawn(laptop, env=_env())
    _seed(original)
    assert original.wait_idle(300)["counts"].get("failed", 0) == 0
    # A person's supersession, undone: a decision and its undo in the sealed log, every status as it was.
    pair = {"olderTopicId": "deploy-freeze", "newerTopicId": "billing-db", "listed": False}
    assert original.result("confirmSupersession", pair)["status"] == "Superseded"
    undone = original.result("restoreMemory", {"topicId": "deploy-freeze"})
    before = _ranked(original)
    url, namespace = postgres.url(), f"mig{uuid.uuid4().hex[:8]}"

    busy = _migrate(laptop, url, namespace)  # the bridge still owns the workspace
    assert busy.returncode == 3 and b"WORKSPACE_BUSY" in busy.stderr
    original.close()

    first = _migrate(laptop, url, namespace)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert (report["memories"], report["copied"], report["skipped"], report["conflicts"]) == (4, 4, 0, [])
    assert report["queuedMemories"] == 4 and len(report["queuedOperations"]) == 1 and report["decisions"] == 1
    again = json.loads(_migrate(laptop, url, namespace).stdout)
    assert (again["copied"], again["skipped"], again["queuedOperations"], again["decisions"]) == (0, 4, [], 0)
    assert b"team-secret" not in first.stdout + first.stderr

    with sqlite3.connect(laptop / ".flowbaby" / "memories.sqlite") as local:
        rows = local.execute(f"SELECT {COLUMNS} FROM memories ORDER BY memory_id").fetchall()
    schema = schema_name(namespace)
    with psycopg.connect(url) as conn:
        copied = conn.execute(f'SELECT {COLUMNS} FROM "{schema}".memories ORDER BY memory_id'.encode()).fetchall()
    assert copied == rows
    assert {(r[1], r[2], r[3]) for r in rows} == {
        ("redis-cache", 1, "Superseded"),
        ("redis-cache", 2, "Active"),
        ("billing-db", 1, "DecisionRecord"),
        ("deploy-freeze", 1, "Active"),
    }

    team = tmp_path / "ci-runner"  # another folder on the namespace: the graph is rebuilt there
    team.mkdir()
    served = spawn(team, env=_env(FLOWBABY_DATABASE_URL=url, FLOWBABY_NAMESPACE=namespace))
    final = served.wait_idle(300)
    assert final["counts"].get("completed") == 1 and final["counts"].get("failed", 0) == 0
    assert served.result("health")["memories"] == 4
    assert _ranked(served) == before
    shown = served.result("getMemory", {"topicId": "deploy-freeze"})["reconcile"]
    copied_decisions = [(e["id"], e["decidedBy"], e["restoredAt"]) for e in shown]
    assert copied_decisions == [(undone["id"], "manual", undone["restoredAt"])], shown
    with psycopg.connect(url) as conn:
        states = conn.execute(f'SELECT DISTINCT graph_state FROM "{schema}".memories'.encode()).fetchall()
        vectors = conn.execute(f'SELECT count(DISTINCT memory_id) FROM "{schema}".memory_chunks'.encode()).fetchone()
    assert states == [("indexed",)] and vectors == (4,)
    served.close()

    # The same namespace behind `flowbaby serve`, and a laptop connected to it with `flowbaby connect`.
    token = tmp_path / "team.token"
    token.write_text("team-token-42\n")
    token.chmod(0o600)
    server_env = {"FLOWBABY_DATABASE_URL": url, "FLOWBABY_NAMESPACE": namespace, "FLOWBABY_API_TOKEN": "team-token-42"}
    server = serve(team, env=server_env)
    laptop2 = tmp_path / "laptop2"
    laptop2.mkdir()
    connect = subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "connect", server.url]
        + ["--token-file", str(token), "--namespace", namespace, "--workspace", str(laptop2)],
        capture_output=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert connect.returncode == 0, connect.stderr
    remote = spawn(laptop2, env=_env())
    assert remote.result("health")["memories"] == 4
    assert _ranked(remote) == before
    assert not (laptop2 / ".flowbaby" / "memories.sqlite").exists()
