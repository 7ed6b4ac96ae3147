"""cognee on the team backend: a real bridge on Postgres builds the graph with cognee's relational
data and graph (its postgres provider), and no vectors, in the namespace's `cognee_<namespace>`
schema, and shares the projection through `flowbaby_<namespace>.graph_projection`, so another
folder (machine) on the namespace sees the graph without rebuilding it."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

from bridge.client import BridgeClient
from graph.backends.team.cognee_databases import cognee_schema
from graph.backends.team.schema import schema_name
from tests.conftest import summary
from tests.integration.test_team_backend import _env
from tests.support.fake_openai import FakeOpenAI
from tests.support.postgres import PostgresServer


def test_the_graph_lives_in_the_namespace_and_every_folder_sees_it(
    spawn: Callable[..., BridgeClient], postgres: PostgresServer, tmp_path: Path
) -> None:
    namespace = f"graph{uuid.uuid4().hex[:8]}"
    env = _env(postgres.url(), namespace)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    client = spawn(laptop, env=env)
    client.result("ingestForAgent", summary())
    client.result(
        "ingestForAgent",
        summary(
            "kafka-retries",
            topic="Kafka retry policy",
            decisions=["Retry Kafka consumers with backoff in billing/reconcile.py"],
        ),
    )
    final = client.wait_idle(300)
    assert final["counts"].get("failed", 0) == 0 and final["counts"].get("completed") == 2, final
    stats = client.result("graphStats")
    client.close()
    assert stats["entities"] > 0, stats

    local = laptop / ".flowbaby"
    left = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
    print("left under .flowbaby:", left)
    assert not (local / "graph" / "projection.json").exists()
    databases = local / "cognee" / "system" / "databases"
    assert not databases.exists() or not any(databases.iterdir()), list(databases.rglob("*"))

    with psycopg.connect(postgres.url()) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (cognee_schema(namespace),)
            )
        }
        nodes = conn.execute(f'SELECT count(*) FROM "{cognee_schema(namespace)}".graph_node'.encode()).fetchone()
        projection = conn.execute(
            f'SELECT version FROM "{schema_name(namespace)}".graph_projection'.encode()
        ).fetchone()
        public = {
            row[0]
            for row in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        }
    print("cognee tables:", sorted(tables))
    assert {"graph_node", "graph_edge", "data", "datasets"} <= tables
    assert "DocumentChunk_text" not in tables  # no vector collections (contract section 6)
    assert nodes is not None and nodes[0] > 0
    assert projection is not None
    assert not public, public

    ci = tmp_path / "ci-runner"  # another folder (machine) on the same namespace
    ci.mkdir()
    other = spawn(ci, env=env)
    assert other.result("graphStats")["entities"] == stats["entities"]
    hits = other.result("retrieveForAgent", {"query": "Kafka consumer retries", "maxResults": 5})["entries"]
    assert hits and hits[0]["topicId"] == "kafka-retries"
    assert other.wait_idle(60)["counts"].get("completed") == 2  # nothing was rebuilt
    other.close()

    # Another team's namespace on the same database: its own cognee schema, none of this graph.
    elsewhere = tmp_path / "other-team"
    elsewhere.mkdir()
    stranger_ns = f"other{uuid.uuid4().hex[:8]}"
    stranger = spawn(elsewhere, env=_env(postgres.url(), stranger_ns))
    stranger.result(
        "ingestForAgent",
        summary(
            "search-index",
            topic="Search index rebuild",
            context="We rebuild the OpenSearch index nightly.",
            decisions=["Rebuild the OpenSearch index at 02:00"],
        ),
    )
    assert stranger.wait_idle(300)["counts"].get("completed") == 1
    assert stranger.result("graphStats")["entities"] > 0
    stranger.close()
    with psycopg.connect(postgres.url()) as conn:
        after = conn.execute(f'SELECT count(*) FROM "{cognee_schema(namespace)}".graph_node'.encode()).fetchone()
        named = {
            (ns, term): conn.execute(
                f'SELECT count(*) FROM "{cognee_schema(ns)}".graph_node WHERE name ILIKE %s'.encode(), (f"%{term}%",)
            ).fetchone()
            != (0,)
            for ns in (namespace, stranger_ns)
            for term in ("kafka", "opensearch")
        }
    assert after == nodes  # the other namespace's build wrote nothing here
    assert named[(namespace, "kafka")] and named[(stranger_ns, "opensearch")]
    assert not named[(namespace, "opensearch")] and not named[(stranger_ns, "kafka")]


def test_a_memory_another_machine_ingested_is_repaired_on_this_one(
    spawn: Callable[..., BridgeClient], postgres: PostgresServer, tmp_path: Path
) -> None:
    """The laptop's build fails after cognee's `add` (the LLM answers garbage to cognify), and the
    laptop's folder is then gone with its copy of the document. A CI runner's folder on the
    namespace repairs it: its worker renders the document from the store again, and the graph is
    built there."""
    namespace = f"repair{uuid.uuid4().hex[:8]}"
    with FakeOpenAI() as server:
        env = {
            **_env(postgres.url(), namespace),
            "LLM_PROVIDER": "custom",
            "LLM_MODEL": "fake-extractor",
            "LLM_ENDPOINT": server.url,
        }
        laptop = tmp_path / "laptop"
        laptop.mkdir()
        client = spawn(laptop, env=env)
        server.mode = "garbage"
        reply = client.result("ingestForAgent", summary("kafka-retries", topic="Kafka retry policy"))
        notice = client.wait_notification(300)
        assert notice["params"]["status"] == "failed" and notice["params"]["operationId"] == reply["operationId"]
        client.close()
        with psycopg.connect(postgres.url()) as conn:
            locations = [
                row[0]
                for row in conn.execute(
                    f'SELECT raw_data_location FROM "{cognee_schema(namespace)}".data'.encode()
                ).fetchall()
            ]
        assert locations == []  # the failed batch was taken out of cognee's dataset (`repair` adds it again)
        shutil.rmtree(laptop)

        server.mode = "good"
        ci = tmp_path / "ci-runner"
        ci.mkdir()
        other = spawn(ci, env=env)
        repaired = other.result("repair", {})
        assert repaired["requeuedMemories"] == 1, repaired
        notice = other.wait_notification(300)
        assert notice["params"] == {"operationId": repaired["operationId"], "status": "completed"}, notice
        assert other.result("graphStats")["entities"] > 0
        assert other.result("indexStatus")["status"] == "ready"
        other.close()
