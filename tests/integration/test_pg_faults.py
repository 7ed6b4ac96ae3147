"""Faults of the team backend with a real Postgres: the database going away mid-run and coming
back, the connection pool running out, and start-up errors through `serve --database-url`.

The outage tests stop and start a server of their own (the session's `postgres` server is shared
with other tests). Timings are printed (pytest -s) and bounded loosely: this machine is shared."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from bridge.client import PROJECT_ROOT
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.pool import POOL_MAX_ENV, POOL_TIMEOUT_ENV, RETRY_AFTER_UNAVAILABLE_SEC
from graph.backends.team.schema import schema_name
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.memories import new_operation_id
from tests.conftest import summary
from tests.integration.test_http_api import Server
from tests.support.fakes import memory
from tests.support.postgres import PostgresServer, free_port

pytestmark = pytest.mark.postgres


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server this test may stop and start (not the session's shared one)."""
    server = PostgresServer.start()
    yield server
    with contextlib.suppress(subprocess.CalledProcessError):  # a test that failed while it was stopped
        server.remove()


def _namespace() -> str:
    return f"faults{uuid.uuid4().hex[:8]}"


def test_a_store_answers_database_unavailable_then_recovers_by_itself(own_postgres: PostgresServer) -> None:
    store = PostgresMemoryStore(own_postgres.url(), _namespace())
    kept = store.stage(memory("", topic_id="kept"), new_operation_id())
    own_postgres.stop()
    began = time.monotonic()
    with pytest.raises(FlowbabyError) as refused:
        store.stage(memory("", topic_id="lost"), new_operation_id())
    first_refusal = time.monotonic() - began
    assert refused.value.code is ErrorCode.DATABASE_UNAVAILABLE
    assert refused.value.details == {"retryAfterSec": RETRY_AFTER_UNAVAILABLE_SEC}
    assert own_postgres.password not in refused.value.message
    began = time.monotonic()
    for _ in range(20):  # while down, refusals are immediate (one probe connection per interval)
        with pytest.raises(FlowbabyError):
            store.counts()
    refusals = (time.monotonic() - began) / 20
    own_postgres.resume()
    began = time.monotonic()
    while True:
        try:
            assert [m.memory_id for m in store.iter_memories()] == [kept.memory_id]  # the refused one was not staged
            break
        except FlowbabyError:
            assert time.monotonic() - began < 10
            time.sleep(0.05)
    recovered = time.monotonic() - began
    store.stage(memory("", topic_id="after"), new_operation_id())
    assert store.counts()["memories"] == 2
    second = PostgresMemoryStore(own_postgres.url(), store.namespace)  # another server joins after the outage
    assert second.counts()["memories"] == 2
    second.close()
    store.close()
    print(f"\nfirst refusal {first_refusal * 1000:.1f} ms, refusal while down {refusals * 1000:.2f} ms, "
          f"recovered {recovered * 1000:.0f} ms after the server answered")  # fmt: skip
    assert first_refusal < 2 and refusals < 0.1


def test_a_restart_between_two_quick_calls_costs_one_call(postgres: PostgresServer) -> None:
    """A connection used within CHECK_IDLE_SEC is not checked: if the server restarted meanwhile,
    that call answers DATABASE_UNAVAILABLE (and changed nothing), every connection is renewed,
    and the next call succeeds without waiting."""
    store = PostgresMemoryStore(postgres.url(), _namespace())
    store.stage(memory("", topic_id="kept"), new_operation_id())
    postgres.restart()
    expected = {"kept", "after"}
    try:  # the pool may hand out a connection idle for longer (checked, so this call succeeds)
        store.stage(memory("", topic_id="maybe"), new_operation_id())
        expected.add("maybe")
    except FlowbabyError as lost:
        assert lost.code is ErrorCode.DATABASE_UNAVAILABLE
    store.stage(memory("", topic_id="after"), new_operation_id())
    assert {m.topic_id for m in store.iter_memories()} == expected
    store.close()


def test_an_exhausted_pool_queues_then_answers_database_busy(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool of one connection, held by a call stuck behind a table lock: the next call waits
    FLOWBABY_PG_POOL_TIMEOUT_SEC in the queue, then gets DATABASE_BUSY; the stuck one still succeeds."""
    monkeypatch.setenv(POOL_MAX_ENV, "1")
    monkeypatch.setenv(POOL_TIMEOUT_ENV, "0.5")
    namespace = _namespace()
    store = PostgresMemoryStore(postgres.url(), namespace)
    with psycopg.connect(postgres.url()) as blocker:
        blocker.execute(f'LOCK TABLE "{schema_name(namespace)}".memories IN ACCESS EXCLUSIVE MODE'.encode())
        stuck = threading.Thread(target=store.stage, args=(memory("", topic_id="slow"), new_operation_id()))
        stuck.start()
        time.sleep(0.3)  # it holds the pool's one connection, waiting on the lock
        began = time.monotonic()
        with pytest.raises(FlowbabyError) as busy:
            store.operations()
        waited = time.monotonic() - began
        assert busy.value.code is ErrorCode.DATABASE_BUSY and busy.value.details == {"retryAfterSec": 2}
        assert 0.5 <= waited < 2.5
        assert stuck.is_alive()
    stuck.join(10)
    assert store.counts()["memories"] == 1
    store.close()
    print(f"\nDATABASE_BUSY after {waited * 1000:.0f} ms (pool timeout 500 ms)")


def _serve_env(namespace: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_", "PG"))}
    return {**env, "FLOWBABY_NAMESPACE": namespace, "FLOWBABY_MAX_QUEUED": "50", **extra}


def _wait_for(call: Callable[[], httpx.Response], status: int, within: float) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    while True:
        reply = call()
        if reply.status_code == status:
            return reply, time.monotonic() - began
        assert time.monotonic() - began < within, reply.text
        time.sleep(0.1)


def test_serve_answers_503_while_the_database_is_away_and_recovers_by_itself(
    own_postgres: PostgresServer, workspace: Path
) -> None:
    """`serve --database-url` (password in PGPASSWORD): the server is stopped mid-run, requests
    get 503 + Retry-After and change nothing; it is started again and the same serve process
    answers again, with the memories staged before, without a restart."""
    url = own_postgres.url().replace(f":{own_postgres.password}@", "@")  # the password comes from PGPASSWORD
    env = _serve_env(_namespace(), PGPASSWORD=own_postgres.password, FLOWBABY_BUILD_GRAPH="0")  # reads no graph
    server = Server(workspace, "--database-url", url, env=env)
    try:
        server.wait_ready(120)
        auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
        client = httpx.Client(base_url=server.url, headers=auth, timeout=60)
        staged = [client.post("/api/agent/ingest", json=summary(f"before-{i}")) for i in range(2)]
        assert [r.status_code for r in staged] == [202, 202]
        found = client.post("/api/agent/retrieve", json={"query": "Redis cache TTL", "maxResults": 5})
        assert found.status_code == 200 and found.json()["totalResults"] >= 1

        own_postgres.stop()
        stopped = time.monotonic()
        refused = client.post("/api/agent/ingest", json=summary("during"))
        first_503 = time.monotonic() - stopped
        assert refused.status_code == 503, refused.text
        assert refused.json()["errorCode"] == "DATABASE_UNAVAILABLE" and refused.headers["Retry-After"] == "5"
        search = client.post("/api/agent/retrieve", json={"query": "Redis", "maxResults": 3})
        assert search.status_code == 503 and search.json()["error"] == "DATABASE_UNAVAILABLE"
        assert search.headers["Retry-After"] == "5"
        for path in ("/api/agent/background", "/api/health"):
            reply = client.get(path)
            assert reply.status_code == 503 and reply.json()["errorCode"] == "DATABASE_UNAVAILABLE", path
        assert client.get("/api/health", headers={"Authorization": ""}).status_code == 200  # the process is up

        own_postgres.resume()
        _, recovered = _wait_for(lambda: client.post("/api/agent/ingest", json=summary("after")), 202, 30)
        print(
            f"\nfirst 503 {first_503 * 1000:.0f} ms after the stop; first 202 {recovered * 1000:.0f} ms after the start"
        )
        topics = {
            e["topicId"]
            for e in client.post(
                "/api/agent/retrieve", json={"query": "Redis caching decision", "maxResults": 10}
            ).json()["entries"]
        }
        assert {"before-0", "before-1", "after"} <= topics and "during" not in topics
        assert client.get("/api/agent/memories/during").status_code == 404  # the refused ingest was not staged
        assert client.get("/api/agent/background").status_code == 200
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    assert own_postgres.password not in log and "Traceback" not in log


@pytest.mark.parametrize("fault", ["down", "password", "database", "pgvector"])
def test_serve_database_url_refuses_to_start_naming_the_cause(
    postgres: PostgresServer, workspace: Path, fault: str
) -> None:
    url = {
        "down": f"postgresql://flowbaby:{postgres.password}@127.0.0.1:{free_port()}/team",
        "password": postgres.url(password="not-the-password"),
        "database": postgres.url("no_such_db"),
        "pgvector": postgres.url(
            postgres.create_database().rsplit("/", 1)[1], options="-c extension_control_path=/nonexistent"
        ),
    }[fault]
    cause = {
        "down": "no server answers there",
        "password": 'the server rejected the password of user "flowbaby"',
        "database": "the database does not exist",
        "pgvector": "has no pgvector extension",
    }[fault]
    serve = subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "serve", "--workspace", str(workspace)]
        + ["--port", str(free_port()), "--database-url", url],
        capture_output=True,
        env={**_serve_env(_namespace()), "PYTHONPATH": str(PROJECT_ROOT)},
        timeout=120,
        check=False,
    )
    assert serve.returncode == 3, serve.stderr
    assert cause.encode() in serve.stderr and b"Traceback" not in serve.stderr
    assert postgres.password.encode() not in serve.stderr and b"not-the-password" not in serve.stderr


def test_a_bridge_answers_database_unavailable_and_goes_on_when_the_database_is_back(
    spawn, own_postgres: PostgresServer, workspace: Path
) -> None:
    """Over JSON-RPC the faults are results with success:false (sections 5.1 and 5.2), as every contract code."""
    env = {**_serve_env(_namespace()), "PYTHONPATH": str(PROJECT_ROOT)}
    client = spawn(workspace, "--database-url", own_postgres.url(), env=env)
    assert client.result("ingestForAgent", summary("before"))["staged"] is True
    assert client.result("retrieveForAgent", {"query": "Redis", "maxResults": 3})["totalResults"] == 1  # warm
    own_postgres.stop()
    refused = client.result("ingestForAgent", summary("during"))
    assert (refused["success"], refused["errorCode"], refused["retryAfterSec"]) == (False, "DATABASE_UNAVAILABLE", 5)
    search = client.result("retrieveForAgent", {"query": "Redis", "maxResults": 3})
    assert (search["error"], search["errorCode"], search["retryAfterSec"]) == ("DATABASE_UNAVAILABLE",) * 2 + (5,)
    own_postgres.resume()
    began = time.monotonic()
    while not client.result("ingestForAgent", summary("after")).get("staged"):
        assert time.monotonic() - began < 30
        time.sleep(0.1)
    topics = [e["topicId"] for e in client.result("retrieveForAgent", {"query": "Redis", "maxResults": 10})["entries"]]
    assert {"before", "after"} <= set(topics) and "during" not in topics


def test_serve_answers_database_busy_when_its_pool_stays_taken(postgres: PostgresServer, workspace: Path) -> None:
    """A pool of one connection, taken by an ingest stuck behind a table lock the test holds: another
    request queues for FLOWBABY_PG_POOL_TIMEOUT_SEC, then gets 503 DATABASE_BUSY + Retry-After; the
    stuck ingest is answered 202 once the lock goes."""
    namespace = _namespace()
    env = _serve_env(namespace, **{POOL_MAX_ENV: "1", POOL_TIMEOUT_ENV: "1", "FLOWBABY_BUILD_GRAPH": "0"})
    server = Server(workspace, "--database-url", postgres.url(), env=env)
    try:
        server.wait_ready(120)
        auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
        client = httpx.Client(base_url=server.url, headers=auth, timeout=60)
        assert client.post("/api/agent/retrieve", json={"query": "warm", "maxResults": 1}).status_code == 200
        with psycopg.connect(postgres.url()) as blocker:
            blocker.execute(f'LOCK TABLE "{schema_name(namespace)}".memories IN ACCESS EXCLUSIVE MODE'.encode())
            stuck: list[httpx.Response] = []
            ingest = threading.Thread(target=lambda: stuck.append(client.post("/api/agent/ingest", json=summary())))
            ingest.start()
            time.sleep(1.0)  # it holds the one connection, waiting on the lock
            began = time.monotonic()
            busy = client.get("/api/agent/background")
            waited = time.monotonic() - began
            assert busy.status_code == 503 and busy.json()["errorCode"] == "DATABASE_BUSY", busy.text
            assert busy.headers["Retry-After"] == "2" and 1.0 <= waited < 4
            assert not stuck
        ingest.join(30)
        assert [r.status_code for r in stuck] == [202]
        print(f"\nHTTP 503 DATABASE_BUSY after {waited * 1000:.0f} ms (pool timeout 1 s)")
    finally:
        server.stop()
