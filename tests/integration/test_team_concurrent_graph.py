"""Two `flowbaby serve` processes build one namespace's graph at once (cognee on Postgres, issue 14):
summaries staged alternately on A and B are claimed by both servers' workers, so two cognee workers
cognify the same dataset concurrently. Every operation must finish, every memory be in the graph,
and the shared projection be the same whichever server is asked."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import summary
from tests.integration.test_team_servers import _client, _env, _folders, _ledger, _start
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TOPICS = [
    ("redis-sessions", "Redis session cache", "billing/reconcile.py reads sessions from Redis."),
    ("kafka-retries", "Kafka retry policy", "billing/reconcile.py retries Kafka consumers with backoff."),
    ("postgres-ledger", "Postgres ledger table", "The Postgres ledger is written by billing/reconcile.py."),
    ("redis-ratelimit", "Redis rate limiter", "The API gateway keeps its rate limiter counters in Redis."),
    ("kafka-audit", "Kafka audit topic", "Audit events go to a Kafka topic read by the API gateway."),
    ("postgres-backups", "Postgres backups", "Postgres is backed up nightly; the ledger restores in minutes."),
    ("gateway-auth", "API gateway auth", "The API gateway checks tokens stored in Redis before billing/reconcile.py."),
    ("ledger-lock", "Ledger lock errors", "E_LEDGER_LOCK in billing/reconcile.py comes from the Postgres ledger."),
]


def test_two_servers_build_one_namespaces_graph_concurrently(postgres: PostgresServer, tmp_path: Path) -> None:
    namespace = f"conc{uuid.uuid4().hex[:8]}"
    folders = _folders(tmp_path)
    env = _env(postgres, namespace, folders, FLOWBABY_MAX_QUEUED="100", FLOWBABY_RETRIEVAL_LANES="graph")
    servers = [_start(folder, env) for folder in folders]
    try:
        clients = [_client(server, folder) for server, folder in zip(servers, folders, strict=True)]
        started = time.monotonic()
        for i, (topic_id, topic, context) in enumerate(TOPICS):
            body = summary(topic_id, topic=topic, context=context, decisions=[f"Keep {topic} as decided"])
            assert clients[i % 2].post("/api/agent/ingest", json=body).status_code == 202
        while True:
            ledger = _ledger(postgres, namespace)
            if all(state in ("completed", "failed") for state, _ in ledger.values()):
                break
            assert time.monotonic() - started < 900, ledger
            time.sleep(0.5)
        wall = time.monotonic() - started
        holders = {holder.split(" pid ")[1].split()[0] for _, holder in ledger.values() if holder}
        print(f"{len(ledger)} operations in {wall:.1f}s, claimed by pids {sorted(holders)}")
        assert {state for state, _ in ledger.values()} == {"completed"}, ledger
        assert len(holders) == 2, "both servers should have built part of the graph"
        metrics = [clients[1].get(f"/api/agent/background/{op}").json()["metrics"] for op in ledger]
        batches = {m["batchId"]: m for m in metrics}.values()  # every operation of a batch has its metrics
        print(
            f"{len(batches)} batches; waited for the namespace's build lock (s):"
            f" {sorted(m['buildLockWaitSec'] for m in batches)};"
            f" cognify (s): {sorted(m['cognifySec'] for m in batches)}"
        )

        for client in clients:
            for topic_id, *_ in TOPICS:
                versions = client.get(f"/api/agent/memories/{topic_id}").json()["versions"]
                assert [v["graphState"] for v in versions] == ["indexed"], (topic_id, versions)
        stats = [client.get("/api/graph/stats").json() for client in clients]
        for s in stats:
            assert s["memories"] == s["memoriesInGraph"] == len(TOPICS) and s["waiting"] == [], s
        assert stats[0]["entities"] == stats[1]["entities"] > 0 and stats[0]["relations"] == stats[1]["relations"]
        snapshots = [client.get("/api/graph").json() for client in clients]
        linked = [  # memory nodes with an edge: in the projection, not only in the store
            {
                n["topic_id"]
                for n in snap["nodes"]
                if n["kind"] == "memory" and any(n["id"] in (e["source"], e["target"]) for e in snap["edges"])
            }
            for snap in snapshots
        ]
        assert linked[0] == linked[1] == {t for t, *_ in TOPICS}, linked

        found = 0
        for query in ("billing/reconcile.py", "E_LEDGER_LOCK in billing/reconcile.py", "Kafka consumers", "Redis"):
            answers = [
                [
                    (e["topicId"], e["lanes"])
                    for e in c.post("/api/agent/retrieve", json={"query": query}).json()["entries"]
                ]
                for c in clients
            ]
            print(f"graph lane {query!r}: {[t for t, _ in answers[0]]}")
            assert answers[0] == answers[1], (query, answers)
            found += len(answers[0])
        assert found > 0
    finally:
        for server in servers:
            server.stop()
