"""Real fronts on the team backend (FLOWBABY_DATABASE_URL): a bridge subprocess stages, builds
and retrieves with its memory versions and vectors in Postgres; a second folder on the same namespace sees them;
fronts started against a database that is down refuse with a clear message and exit code 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from graph.backends.team.schema import schema_name
from tests.conftest import summary
from tests.support.commands import run_bridge_to_exit
from tests.support.postgres import PostgresServer, free_port
from tests.support.session_fixtures import OpenCodeDb, text, tool

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _env(url: str, namespace: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {
        **env,
        "PYTHONPATH": str(PROJECT_ROOT),
        "FLOWBABY_DATABASE_URL": url,
        "FLOWBABY_NAMESPACE": namespace,
        "FLOWBABY_MAX_QUEUED": "50",
    }


def test_a_bridge_keeps_its_memories_in_the_team_namespace(spawn, postgres: PostgresServer, tmp_path: Path) -> None:
    namespace = f"team{uuid.uuid4().hex[:8]}"
    env = _env(postgres.url(), namespace)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    client = spawn(laptop, env=env)
    first = client.result("ingestForAgent", summary())
    second = client.result("ingestForAgent", summary(decisions=["Use Redis with a 60 minute TTL"]))
    assert (first["ingestion_metrics"]["version"], second["ingestion_metrics"]["version"]) == (1, 2)
    final = client.wait_idle(300)
    assert final["counts"].get("failed", 0) == 0 and final["counts"].get("completed") == 2
    entries = client.result("retrieveForAgent", {"query": "Redis cache TTL", "maxResults": 5})["entries"]
    assert [(e["topicId"], e["version"]) for e in entries][:1] == [("redis-cache", 2)]
    client.close()
    for local in ("memories.sqlite", "vectors.lance"):  # versions and vectors live in Postgres
        assert not (laptop / ".flowbaby" / local).exists()
    schema = schema_name(namespace)
    with psycopg.connect(postgres.url()) as conn:
        rows = conn.execute(
            f'SELECT version, status, graph_state FROM "{schema}".memories ORDER BY version'.encode()
        ).fetchall()
        chunks = conn.execute(f'SELECT count(DISTINCT memory_id) FROM "{schema}".memory_chunks'.encode()).fetchone()
    assert rows == [(1, "Superseded", "indexed"), (2, "Active", "indexed")]
    assert chunks == (2,)

    ci = tmp_path / "ci-runner"  # another folder (machine) on the same namespace
    ci.mkdir()
    other = spawn(ci, env=env)
    assert other.result("health")["memories"] == 2
    versions = other.result("retrieveForAgent", {"query": "Redis cache TTL", "maxResults": 5})["entries"]
    assert ("redis-cache", 2) in [(e["topicId"], e["version"]) for e in versions]


def test_fronts_refuse_to_start_when_the_database_is_down(workspace: Path) -> None:
    port = free_port()
    env = _env(f"postgresql://flowbaby:s3cret-pw@127.0.0.1:{port}/team", "down")
    bridge = run_bridge_to_exit(workspace, env)
    first = json.loads(bridge.stdout.splitlines()[0])
    assert bridge.returncode == 3 and first["method"] == "bridgeUnavailable"
    assert first["params"]["error"] == (
        f"Cannot connect to the team database 127.0.0.1:{port}/team: "
        "no server answers there (is it running, and is the host and port right?)"
    )
    serve = subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "serve", "--workspace", str(workspace)]
        + ["--port", str(free_port())],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert serve.returncode == 3
    assert b"FLOWBABY_ERROR: Cannot connect to the team database" in serve.stderr
    for output in (bridge.stdout, bridge.stderr, serve.stderr):
        assert b"Traceback" not in output and b"s3cret-pw" not in output


def test_the_lexical_lane_and_session_memory_live_in_the_team_namespace(
    spawn, postgres: PostgresServer, tmp_path: Path
) -> None:
    """On Postgres, an exact identifier is found by the database's full-text lane, and an OpenCode
    session on disk is imported and searched with its chunks and vectors in the namespace."""
    namespace = f"team{uuid.uuid4().hex[:8]}"
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    db = OpenCodeDb(tmp_path / "opencode")
    db.session("ses_team", laptop, "Canary placement")
    db.turn("ses_team", "user", text("Which region should the payments canary run in?"))
    db.turn("ses_team", "assistant", text("Put the canary in eu-west-3: it has the lowest card-network latency."))
    db.turn("ses_team", "assistant", text("Done."), tool("bash", "make test", "42 passed"))
    env = _env(postgres.url(), namespace) | {
        "FLOWBABY_SESSIONS_OPENCODE_DIR": str(tmp_path / "opencode"),
        "FLOWBABY_SESSIONS_CLAUDE_CODE": "0",
        "FLOWBABY_SESSIONS_WATCH": "0",
    }
    client = spawn(laptop, env=env)
    client.result("ingestForAgent", summary())
    client.result(
        "ingestForAgent",
        summary(
            "ledger-drift",
            topic="Nightly reconciliation drift",
            context="The reconciler flagged KX-40913 when two ledgers disagreed by one cent.",
            decisions=["Round half-even in the reconciler"],
        ),
    )
    client.result("ingestForAgent", summary("ui-theme", topic="Dark mode", context="The web app follows the OS theme."))
    deadline = time.monotonic() + 120
    while True:  # searchable once embedded (the lexical lane serves the memories the catalog holds)
        reply = client.result("retrieveForAgent", {"query": "KX-40913", "maxResults": 3, "abstain": False})
        entries = reply.get("entries", [])
        if entries or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert entries and entries[0]["topicId"] == "ledger-drift" and "lexical" in entries[0]["lanes"], reply

    imported = client.result("sessionsImport", {"session_id": "ses_team"}, timeout=120)
    assert imported["index_status"]["status"] == "ready", imported
    hits = client.result("sessionsSearch", {"session_id": "ses_team", "q": "lowest card network latency", "limit": 2})
    assert "eu-west-3" in hits["results"][0]["chunk_text"], hits
    client.close()
    db.close()
    assert not (laptop / ".flowbaby" / "sessions" / "index.sqlite").exists()
    assert not (laptop / ".flowbaby" / "sessions" / "vectors.lance").exists()
    schema = schema_name(namespace)
    with psycopg.connect(postgres.url()) as conn:
        terms = conn.execute(f"SELECT count(*) FROM \"{schema}\".memory_terms WHERE lexeme = 'kx'".encode()).fetchone()
        chunks = conn.execute(f'SELECT count(*) FROM "{schema}".session_chunks'.encode()).fetchone()
        vectors = conn.execute(f'SELECT count(*) FROM "{schema}".session_vectors'.encode()).fetchone()
    assert terms == (1,) and chunks == vectors and chunks is not None and chunks[0] >= 3


def test_a_decision_made_through_one_server_is_shown_and_undone_through_another(
    spawn, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Issue 50 on the team backend: the reconcile decision log lives in the namespace, so a replace
    decided through the laptop's bridge is listed by getMemory through the CI runner's and restored
    through it, and both then see the restore (nothing left to undo through either)."""
    namespace = f"team{uuid.uuid4().hex[:8]}"
    env = _env(postgres.url(), namespace) | {"FLOWBABY_BUILD_GRAPH": "0", "FLOWBABY_RECONCILE_BUDGET_MS": "20000"}
    servers = []
    for name in ("laptop", "ci-runner"):
        (tmp_path / name).mkdir()
        servers.append(spawn(tmp_path / name, "--rate-limit-per-minute", "0", env=env))
    a, b = servers

    def store(topic: str, decision: str, day: int) -> dict[str, Any]:
        params = {"topic": topic, "context": f"{topic}.", "decisions": [decision], "agentName": "claude-code"}
        return a.result("storeMemory", {**params, "metadata": {"createdAt": f"2026-03-{day:02d}T10:00:00Z"}})

    logs = store("Application logs", "Ship application logs with Filebeat into the Elasticsearch cluster", 1)
    moved = store("Application log storage", "Moved application log storage from Elasticsearch to Grafana Loki", 2)
    decided = moved["reconcile"]
    assert decided["decision"] == "replace" and decided["topicId"] == logs["summary_id"], decided

    shown = b.result("getMemory", {"topicId": logs["summary_id"]})
    assert shown["latest"]["status"] == "Superseded"
    assert [(e["id"], e["newer"]["topicId"]) for e in shown["reconcile"]] == [(decided["id"], moved["summary_id"])]
    undone = b.result("restoreMemory", {"topicId": logs["summary_id"]})
    assert (undone["id"], [r["memoryId"] for r in undone["restored"]]) == (decided["id"], [decided["memoryId"]])

    for server in (a, b):
        seen = server.result("getMemory", {"topicId": logs["summary_id"]})
        assert seen["latest"]["status"] == "Active"
        assert [e["restoredAt"] for e in seen["reconcile"]] == [undone["restoredAt"]]
        assert server.result("restoreMemory", {"topicId": logs["summary_id"]})["errorCode"] == "NOT_FOUND"

    # Forgetting the replaced memory (through either server) forgets the decisions that name it.
    assert a.result("forgetMemory", {"topicId": logs["summary_id"], "waitForStores": False})["success"]
    with psycopg.connect(postgres.url()) as conn:
        left = conn.execute(f'SELECT record FROM "{schema_name(namespace)}".reconcile_log'.encode()).fetchall()
    assert not [row for row in left if logs["summary_id"] in row[0] or "Application logs" in row[0]], left
    assert b.result("getMemory", {"topicId": moved["summary_id"]})["reconcile"] == []
