"""The HTTP API against a real uvicorn server on a loopback port, with httpx."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import networkx as nx
import pytest

from bridge.client import PROJECT_ROOT
from tests.conftest import summary

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, workspace: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workspace.parent / f"serve-{self.port}.stderr"
        """The server's stderr goes to a file: an unread pipe would block it once full."""
        child_env = {**os.environ, **(env or {}), "PYTHONPATH": str(PROJECT_ROOT)}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from flowbaby.cli import main; main()",
                "serve",
                "--workspace",
                str(workspace),
                "--port",
                str(self.port),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("wb"),
            env=child_env,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text(errors="replace")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise TimeoutError("server did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    servers: list[Server] = []

    def start(workspace: Path, *args: str, env: dict[str, str] | None = None, ready: bool = True) -> Server:
        server = Server(workspace, *args, env=env)
        servers.append(server)
        if ready:
            server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


def _token(workspace: Path) -> str:
    return (workspace / ".flowbaby" / "api_token").read_text().strip()


def test_token_file_auth_and_loopback(serve, workspace: Path) -> None:
    server = serve(workspace)
    token_file = workspace / ".flowbaby" / "api_token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = _token(workspace)
    assert httpx.get(f"{server.url}/api/health").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
        reply = httpx.get(f"{server.url}/api/agent/background", headers=headers)
        assert reply.status_code == 401 and reply.json()["errorCode"] == "UNAUTHORIZED"
    ok = httpx.get(f"{server.url}/api/agent/background", headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200 and ok.json()["operations"] == []
    server.stop()
    again = serve(workspace)
    assert _token(workspace) == token  # generated once, then reused
    assert (
        httpx.get(f"{again.url}/api/agent/background", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    )


def test_empty_configured_token_rejects_everything(serve, workspace: Path) -> None:
    server = serve(workspace, env={"FLOWBABY_API_TOKEN": ""})
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer anything"}):
        assert httpx.get(f"{server.url}/api/agent/background", headers=headers).status_code == 401


def test_beyond_loopback_needs_allow_remote(serve, workspace: Path) -> None:
    server = serve(workspace, "--host", "0.0.0.0", ready=False)
    assert server.proc.wait(60) == 2
    assert b"--allow-remote" in server.log.read_bytes()


def test_ingest_retrieve_read_back_and_contract_errors(serve, workspace: Path) -> None:
    """One server (one LanceDB child, no cognee worker: nothing here reads the graph) for two independent
    groups of checks: ingest, retrieval and the memory routes; then the one metadata rule and the error shapes."""
    server = serve(
        workspace, env={"FLOWBABY_API_TOKEN": "s3cret", "FLOWBABY_MAX_QUEUED": "20", "FLOWBABY_BUILD_GRAPH": "0"}
    )
    auth = {"Authorization": "Bearer s3cret"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=120) as client:
        bad = client.post("/api/agent/ingest", json=summary(topic=""))
        assert (
            bad.status_code == 400
            and bad.json()["errorCode"] == "INVALID_PAYLOAD"
            and bad.json()["fields"] == ["topic"]
        )
        assert client.post("/api/agent/ingest", content=b"{nope").status_code == 400
        staged = client.post("/api/agent/ingest", json=summary())
        assert staged.status_code == 202 and staged.json()["staged"] is True
        operation = staged.json()["operationId"]
        assert client.get(f"/api/agent/background/{operation}").json()["operationId"] == operation
        found = client.post("/api/agent/retrieve", json={"query": "E_LEDGER_LOCK"})
        assert found.status_code == 200 and found.json()["entries"][0]["topicId"] == "redis-cache"
        markdown = client.post("/api/agent/retrieve?format=markdown", json={"query": "Redis cache"})
        assert markdown.headers["content-type"].startswith("text/markdown")
        assert markdown.text.startswith("# Retrieved Memories (1 results)")
        invalid = client.post("/api/agent/retrieve", json={"query": "x", "maxResults": 99})
        assert invalid.status_code == 400 and invalid.json()["errorCode"] == "INVALID_REQUEST"
        hits = client.get("/api/agent/search", params={"q": "session cache TTL", "limit": 3}).json()
        assert hits["count"] == 3 and [h["distance"] for h in hits["results"]] == sorted(
            h["distance"] for h in hits["results"]
        )
        assert set(hits["results"][0]) >= {"embedding_id", "distance", "chunk_text", "topicId", "chunk_index"}
        assert client.get("/api/agent/search", params={"q": "x", "limit": "many"}).status_code == 400
        index = client.get("/api/agent/index/status").json()
        assert index["counts"]["memories"] == 1 and (index["status"], index["graphBuilding"]) == ("partial", False)
        assert client.post("/api/agent/index/repair").json()["success"] is True
        versions = client.get("/api/agent/memories/redis-cache").json()["versions"]
        assert [v["version"] for v in versions] == [1] and versions[0]["topic"] == "Redis caching decision"
        missing = client.get("/api/agent/memories/nope")
        assert missing.status_code == 404 and missing.json()["errorCode"] == "NOT_FOUND"
        shown = client.get("/api/agent/memories/redis-cache").json()
        assert shown["latest"] == versions[0] and shown["provenance"]["agentName"] == "architect"
        listed = client.get("/api/agent/memories", params={"status": "Active,DecisionRecord", "limit": 5}).json()
        assert [m["topicId"] for m in listed["memories"]] == ["redis-cache"] and listed["nextCursor"] is None
        assert client.get("/api/agent/memories", params={"agentName": "nobody"}).json()["count"] == 0
        bad = client.get("/api/agent/memories", params={"limit": "many"})
        assert bad.status_code == 400 and bad.json()["fields"] == ["limit"]
        exported = client.get("/api/agent/export", params={"limit": 1}).json()
        assert exported["header"]["memories"] == 1 and exported["memories"][0]["topicId"] == "redis-cache"
        assert client.post("/api/agent/import", json={"memories": exported["memories"]}).json()["skipped"] == 1
        wrong = client.post("/api/agent/import", json={"memories": [{**exported["memories"][0], "status": "Gone"}]})
        assert wrong.status_code == 400 and wrong.json()["fields"] == ["memories.0.status"]
        dry = client.delete("/api/agent/memories/redis-cache", params={"dryRun": "true"}).json()
        assert (dry["dryRun"], dry["versions"]) == (True, 1)
        assert client.post("/api/agent/memories/forget", json={"filter": {}}).status_code == 400
        gone = client.delete("/api/agent/memories/redis-cache", params={"version": 1})
        assert gone.status_code == 200 and gone.json()["versions"] == 1 and gone.json()["pending"] == []
        assert client.get("/api/agent/memories/redis-cache").status_code == 404
        assert client.delete("/api/agent/memories/redis-cache").status_code == 404
    _one_metadata_rule_and_framework_errors_in_the_contract_shape(server, auth)


def test_throttles_answer_429_with_retry_after(serve, workspace: Path) -> None:
    server = serve(workspace, env={"FLOWBABY_API_TOKEN": "t"})
    auth = {"Authorization": "Bearer t"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=120) as client:
        ingests = [client.post("/api/agent/ingest", json=summary(f"topic-{i}")) for i in range(6)]
        assert [r.status_code for r in ingests] == [202] * 5 + [429]
        assert ingests[5].json()["errorCode"] == "429_FLOWBABY_BACKLOG" and int(ingests[5].headers["Retry-After"]) >= 1
        retrievals = [client.post("/api/agent/retrieve", json={"query": f"q{i}"}) for i in range(11)]
        assert [r.status_code for r in retrievals] == [200] * 10 + [429]
        assert (
            retrievals[10].json()["errorCode"] == "RATE_LIMIT_EXCEEDED"
            and int(retrievals[10].headers["Retry-After"]) >= 1
        )


def test_bridge_serves_http_from_the_same_process(spawn, serve, workspace: Path) -> None:
    port = _free_port()
    bridge = spawn(
        workspace,
        "--http",
        "--port",
        str(port),
        "--rate-limit-per-minute",
        "0",
        env={**os.environ, "FLOWBABY_API_TOKEN": "shared", "FLOWBABY_BUILD_GRAPH": "0"},  # reads no graph
    )
    assert bridge.result("ingestForAgent", summary())["staged"]
    auth = {"Authorization": "Bearer shared"}
    deadline = time.monotonic() + 60
    while True:
        try:
            reply = httpx.post(
                f"http://127.0.0.1:{port}/api/agent/retrieve", json={"query": "Redis cache"}, headers=auth, timeout=60
            )
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert reply.status_code == 200 and reply.json()["entries"][0]["topicId"] == "redis-cache"
    # A later `serve` on the same workspace works through the bridge that owns it.
    second = serve(workspace, env={"FLOWBABY_API_TOKEN": "shared"})
    health = httpx.get(f"{second.url}/api/health", headers=auth, timeout=30).json()  # pid needs the token
    assert health["pid"] == bridge.proc.pid
    staged = httpx.post(f"{second.url}/api/agent/ingest", json=summary("through-serve"), headers=auth, timeout=60)
    assert staged.status_code == 202
    versions = bridge.result("retrieveForAgent", {"query": "Redis cache", "maxResults": 5})["entries"]
    assert "through-serve" in {entry["topicId"] for entry in versions}
    assert b"owns the workspace; working through it" in second.log.read_bytes()


def test_memory_context_expands_a_hit(serve, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    from tests.support.built_workspaces import built_copy
    from tests.support.retrieval_fixtures import MULTI_HOP_FIRST, MULTI_HOP_SECOND, MULTI_HOP_SET

    # MULTI_HOP_SET and a second version of its first memory, the graph built (one build per run).
    workspace = built_copy(tmp_path_factory, "multi-hop-revised", tmp_path / "ws")
    server = serve(workspace, env={"FLOWBABY_API_TOKEN": "t"})
    with httpx.Client(base_url=server.url, headers={"Authorization": "Bearer t"}, timeout=120) as client:
        context = client.get(f"/api/agent/memories/{MULTI_HOP_FIRST}/context", params={"q": "advisory locks"}).json()
        assert context["memory"]["version"] == 2 and [v["version"] for v in context["versionsBefore"]] == [1]
        assert context["versionsAfter"] == []
        assert "plat-2291" in {e["name"] for e in context["entities"]}
        linked = {m["topicId"]: m for m in context["relatedMemories"]}
        assert "plat-2291" in linked[MULTI_HOP_SECOND]["via"]
        assert context["relatedMemories"][0]["topicId"] == MULTI_HOP_SECOND  # the query ranks it first
        first = client.get(f"/api/agent/memories/{MULTI_HOP_FIRST}/context", params={"version": 1}).json()
        assert first["memory"]["status"] == "Superseded" and [v["version"] for v in first["versionsAfter"]] == [2]
        assert client.get(f"/api/agent/memories/{MULTI_HOP_FIRST}/context", params={"hops": 3}).status_code == 400
        assert client.get(f"/api/agent/memories/{MULTI_HOP_FIRST}/context", params={"version": 9}).status_code == 404

        snapshot = client.get("/api/graph", params={"topicId": MULTI_HOP_FIRST, "hops": 2})
        graph = nx.node_link_graph(snapshot.json(), edges="edges")
        assert {MULTI_HOP_FIRST, MULTI_HOP_SECOND} <= {d.get("topic_id") for _, d in graph.nodes(data=True)}
        assert client.get("/api/graph").json()["topicId"] is None
        bad = client.get("/api/graph", params={"hops": 9})
        assert (bad.status_code, bad.json()["errorCode"]) == (400, "INVALID_REQUEST")
        assert client.get("/api/graph", params={"topicId": "nope"}).status_code == 404
        stats = client.get("/api/graph/stats", params={"top": 3}).json()
        assert stats["memories"] == len(MULTI_HOP_SET) + 1 and len(stats["topEntities"]) == 3


def _one_metadata_rule_and_framework_errors_in_the_contract_shape(server: Server, auth: dict[str, str]) -> None:
    """HTTP ingest fills what metadata leaves out exactly as the store tool does (one rule, in the
    contract); a missing route or a wrong method answers in the project's own error shape."""
    text = {"topic": "Defaults", "context": "HTTP ingest with an empty metadata object is accepted."}
    with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
        ingested = http.post("/api/agent/ingest", json={**text, "metadata": {}})
        assert ingested.status_code == 202, ingested.text
        meta = ingested.json()["metadata"]
        assert len(meta["topic_id"]) == 16 and meta["created_at"] == meta["updated_at"] and meta["status"] == "Active"
        bare = http.post("/api/agent/ingest", json=text)
        assert bare.status_code == 202 and bare.json()["metadata"]["topic_id"] != meta["topic_id"]
        stored = http.post("/api/agent/memories", json={**text, "metadata": {}})
        assert stored.status_code == 202 and len(stored.json()["summary_id"]) == 16
        bad = http.post("/api/agent/ingest", json={**text, "metadata": {"createdAt": "last tuesday"}})
        assert bad.status_code == 400 and bad.json()["fields"] == ["metadata.createdAt"]

        wrong_method = http.put("/api/agent/ingest", json=text)
        assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
        assert wrong_method.json() == {
            "success": False,
            "error": "PUT /api/agent/ingest is not allowed; the route takes POST",
            "errorCode": "METHOD_NOT_ALLOWED",
        }
        nowhere = http.get("/api/agent/nowhere")
        assert nowhere.status_code == 404
        assert nowhere.json() == {
            "success": False,
            "error": "No route GET /api/agent/nowhere",
            "errorCode": "NOT_FOUND",
        }
    anonymous = httpx.get(f"{server.url}/api/agent/nowhere")
    assert anonymous.status_code == 401 and anonymous.json()["errorCode"] == "UNAUTHORIZED"
