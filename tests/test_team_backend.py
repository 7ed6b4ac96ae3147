"""Real fronts on the team backend (FLOWBABY_DATABASE_URL): a bridge subprocess stages, builds
and retrieves with its memory versions and vectors in Postgres; a second folder on the same namespace sees them;
fronts started against a database that is down refuse with a clear message and exit code 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

from graph.core.pg_store import schema_name
from tests.conftest import summary
from tests.postgres import PostgresServer, free_port

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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
    bridge = subprocess.run(
        [sys.executable, "-m", "bridge", "--workspace", str(workspace)],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    first = json.loads(bridge.stdout.splitlines()[0])
    assert bridge.returncode == 3 and first["method"] == "bridgeUnavailable"
    assert first["params"]["error"] == (
        f"Cannot connect to the team database 127.0.0.1:{port}/team: "
        "no server answers there (is it running, and is the host and port right?)"
    )
    serve = subprocess.run(
        [sys.executable, "-c", "from bridge.cli import main; main()", "serve", "--workspace", str(workspace)]
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
