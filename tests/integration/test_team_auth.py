"""A team server: one real `flowbaby serve` (uvicorn) on a real Postgres serves several namespaces,
with per-user tokens made by `flowbaby tokens` in a subprocess. Scope (403), revocation (401),
the token's user in each namespace's audit table, and no data crossing namespaces."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import summary
from tests.integration.test_http_api import Server
from tests.integration.test_mcp import _http_session
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from flowbaby.cli import main; main()"]


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {
        **env,
        "PYTHONPATH": str(PROJECT_ROOT),
        "FLOWBABY_DATABASE_URL": url,
        "FLOWBABY_NAMESPACE": "home",
        "FLOWBABY_API_TOKEN": "workspace-secret",
        "FLOWBABY_MAX_QUEUED": "20",
    }


def tokens(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "tokens", *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def _create_tokens(env: dict[str, str]) -> dict[str, str]:
    """alice's token for namespace alpha, bob's for beta, ops' for every namespace (`*`)."""
    made = {}
    for user, scope in (("alice", "alpha"), ("bob", "beta"), ("ops", "*")):
        created = tokens(env, "create", "--user", user, "--namespace", scope)
        assert created.returncode == 0, created.stderr
        made[user] = created.stdout.strip()
        assert made[user].startswith("fbt_") and "shown once" in created.stderr
    return made


@contextlib.contextmanager
def _team_server(tmp_path: Path, env: dict[str, str]) -> Iterator[str]:
    """A team server on the test's database (it reads no graph): its URL; it must stop cleanly."""
    workspace = tmp_path / "team-server"
    workspace.mkdir()
    server = Server(workspace, env={**env, "FLOWBABY_BUILD_GRAPH": "0"})
    try:
        server.wait_ready(120)
        yield server.url
    finally:
        server.stop()
    assert server.proc.returncode == 0, server.log.read_text(errors="replace")[-3000:]


def _bearer(token: str, namespace: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if namespace is not None:
        headers["X-Flowbaby-Namespace"] = namespace
    return headers


def _audit(url: str, namespace: str, wanted: int, timeout: float = 15.0) -> list[tuple[Any, ...]]:
    """(command, user_name, agent_name, result) rows of the namespace's audit table, once `wanted` are there."""
    deadline = time.monotonic() + timeout
    while True:
        with psycopg.connect(url) as conn:
            query = f"SELECT command, user_name, agent_name, result FROM flowbaby_{namespace}.audit_log ORDER BY seq"
            rows = conn.execute(query.encode()).fetchall()
        if len(rows) >= wanted or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_one_server_many_namespaces_scoped_tokens_audit_and_isolation(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.create_database()
    env = _env(url)
    made = _create_tokens(env)
    bad = tokens(env, "create", "--user", "eve", "--namespace", "admin")
    assert bad.returncode == 2 and '"admin" is reserved' in bad.stderr
    listed = json.loads(tokens(env, "list", "--json").stdout)
    assert [(t["user"], t["namespaces"], t["revokedAt"]) for t in listed] == [
        ("alice", ["alpha"], None),
        ("bob", ["beta"], None),
        ("ops", ["*"], None),
    ]
    with psycopg.connect(url) as conn:  # only hashes are stored
        stored = conn.execute("SELECT token_hash FROM flowbaby_admin.tokens").fetchall()
    assert all(len(bytes(row[0])) == 32 for row in stored) and not any(
        t.split("_", 2)[2].encode() in bytes(row[0]) for t in made.values() for row in stored
    )

    with _team_server(tmp_path, env) as api:
        alice, bob, ops = made["alice"], made["bob"], made["ops"]

        # alice stages in alpha through the path prefix
        staged = httpx.post(
            f"{api}/api/ns/alpha/agent/ingest", json=summary("alpha-topic"), headers=_bearer(alice), timeout=120
        )
        assert staged.status_code == 202, staged.text
        operation = staged.json()["operationId"]
        found = httpx.post(
            f"{api}/api/ns/alpha/agent/retrieve", json={"query": "Redis cache TTL"}, headers=_bearer(alice), timeout=120
        ).json()
        assert [e["topicId"] for e in found["entries"]][:1] == ["alpha-topic"]

        # bob's namespace beta (by header) sees nothing of it, by any route
        beta = _bearer(bob, "beta")
        nothing = httpx.post(f"{api}/api/agent/retrieve", json={"query": "Redis cache TTL"}, headers=beta, timeout=120)
        assert nothing.status_code == 200 and nothing.json()["entries"] == []
        background = httpx.get(f"{api}/api/agent/background", headers=beta, timeout=60).json()
        assert background["operations"] == []
        assert httpx.get(f"{api}/api/agent/background/{operation}", headers=beta, timeout=60).status_code == 404
        assert httpx.get(f"{api}/api/agent/memories/alpha-topic", headers=beta, timeout=60).status_code == 404
        assert httpx.get(f"{api}/api/agent/search?q=Redis", headers=beta, timeout=60).json()["results"] == []
        # ... even for a token allowed everywhere, asking beta
        assert (
            httpx.get(f"{api}/api/ns/beta/agent/memories/alpha-topic", headers=_bearer(ops), timeout=60).status_code
            == 404
        )
        assert (
            httpx.get(f"{api}/api/ns/alpha/agent/memories/alpha-topic", headers=_bearer(ops), timeout=60).status_code
            == 200
        )
        with psycopg.connect(url) as conn:
            counts = [
                conn.execute(f"SELECT count(*) FROM flowbaby_{ns}.memories".encode()).fetchone()[0]  # type: ignore[index]
                for ns in ("alpha", "beta", "home")
            ]
        assert counts == [1, 0, 0]

        # scope: 403 with its code; the workspace token keeps the server's own namespace only
        for path, headers in (
            ("/api/ns/beta/agent/background", _bearer(alice)),
            ("/api/agent/background", _bearer(alice)),
            ("/api/ns/alpha/agent/background", _bearer("workspace-secret")),
        ):
            refused = httpx.get(f"{api}{path}", headers=headers, timeout=60)
            assert (refused.status_code, refused.json()["errorCode"]) == (403, "NAMESPACE_FORBIDDEN"), path
        own = httpx.get(f"{api}/api/agent/background", headers=_bearer("workspace-secret"), timeout=60)
        assert own.status_code == 200
        unknown = httpx.get(f"{api}/api/ns/alpha/agent/background", headers=_bearer(alice[:-2] + "xx"), timeout=60)
        assert (unknown.status_code, unknown.json()["errorCode"]) == (401, "UNAUTHORIZED")
        bad_name = httpx.get(f"{api}/api/ns/Alpha/agent/background", headers=_bearer(ops), timeout=60)
        assert (bad_name.status_code, bad_name.json()["errorCode"]) == (400, "INVALID_NAMESPACE")
        health = httpx.get(f"{api}/api/ns/alpha/health", headers=_bearer(alice), timeout=60).json()
        assert health["memories"] == 1 and health["workspace"].endswith("/.flowbaby/namespaces/alpha")
        assert set(httpx.get(f"{api}/api/ns/beta/health", headers=_bearer(alice), timeout=60).json()) == {
            "success",
            "status",
            "version",
        }

        # the audit log names the token's user, in the namespace's own table
        alpha_rows = _audit(url, "alpha", 2)
        assert ("ingestForAgent", "alice", "architect", "success") in alpha_rows
        assert ("retrieveForAgent", "alice", None, "success") in alpha_rows
        assert ("retrieveForAgent", "bob", None, "success") in _audit(url, "beta", 1)
        alpha_folder = tmp_path / "team-server" / ".flowbaby" / "namespaces" / "alpha"
        assert not (alpha_folder / ".flowbaby" / "agent_audit.log").exists()
        # MCP over HTTP serves the server's own namespace, and its tool calls are audited with the user too
        assert "[topicId " in asyncio.run(_http_session(f"{api}/mcp", ops))
        home_rows = _audit(url, "home", 2)
        assert ("storeMemory", "ops", "http-agent", "success") in home_rows
        assert ("retrieveMemory", "ops", "http-agent", "success") in home_rows

        # revocation: 401 within the documented 5 s
        revoked = tokens(env, "revoke", "--user", "alice")
        assert revoked.returncode == 0 and "revoked" in revoked.stdout
        assert tokens(env, "revoke", "--user", "alice").returncode == 1
        began = time.monotonic()
        while True:
            answer = httpx.get(f"{api}/api/ns/alpha/agent/background", headers=_bearer(alice), timeout=60)
            if answer.status_code == 401 or time.monotonic() - began > 8:
                break
            time.sleep(0.25)
        assert (answer.status_code, answer.json()["errorCode"]) == (401, "UNAUTHORIZED")
        assert time.monotonic() - began <= 6.0
        assert [t["revokedAt"] is not None for t in json.loads(tokens(env, "list", "--json").stdout)] == [
            True,
            False,
            False,
        ]


def _rpc(api: str, path: str, token: str, body: dict[str, Any], session: str | None = None) -> httpx.Response:
    headers = {**_bearer(token), "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    return httpx.post(f"{api}{path}", json=body, headers=headers, timeout=120)


def _sse_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a streamable-HTTP reply (an SSE stream of one message)."""
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1])["result"])


def test_mcp_over_http_in_any_namespace_with_the_token_s_scope_and_user(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database()
    env = _env(url)
    made = _create_tokens(env)
    alice, bob, ops = made["alice"], made["bob"], made["ops"]
    with _team_server(tmp_path, env) as api:
        # alice stores and retrieves through /api/ns/alpha/mcp
        assert "[topicId " in asyncio.run(_http_session(f"{api}/api/ns/alpha/mcp", alice))
        query = {"query": "session cache eviction"}
        in_alpha = httpx.post(f"{api}/api/ns/alpha/agent/retrieve", json=query, headers=_bearer(alice), timeout=120)
        assert [e["topic"] for e in in_alpha.json()["entries"]][:1] == ["HTTP note"], in_alpha.text
        in_beta = httpx.post(f"{api}/api/ns/beta/agent/retrieve", json=query, headers=_bearer(ops), timeout=120)
        assert in_beta.status_code == 200 and in_beta.json()["entries"] == []
        in_home = httpx.post(f"{api}/api/agent/retrieve", json=query, headers=_bearer(ops), timeout=120)
        assert in_home.json()["entries"] == []

        # outside the token's scope: 403, by path or by header
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for path, headers in (("/api/ns/beta/mcp", _bearer(alice)), ("/mcp", _bearer(alice, "beta"))):
            refused = httpx.post(f"{api}{path}", json=init, headers=headers, timeout=60)
            assert (refused.status_code, refused.json()["errorCode"]) == (403, "NAMESPACE_FORBIDDEN"), path

        # /mcp with the header: bob's session works in beta
        assert "[topicId " in asyncio.run(_http_session(f"{api}/mcp", bob, namespace="beta"))

        # each call runs in its own request's namespace and user, not those of the request that opened the
        # session (home, no memories; the session's task was started from that request's context)
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-agent", "version": "1"},
            },
        }
        opened = _rpc(api, "/mcp", ops, initialize)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert _rpc(api, "/mcp", ops, ready, session).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flowbaby_indexStatus"}}
        counts = {
            ns: _sse_result(_rpc(api, f"/api/ns/{ns}/mcp", token, call, session))["structuredContent"]["counts"]
            for ns, token in (("alpha", ops), ("beta", bob), ("home", ops))
        }
        assert {ns: c["memories"] for ns, c in counts.items()} == {"alpha": 1, "beta": 1, "home": 0}

        # each namespace's audit table names the token's user of its MCP calls
        alpha_rows = _audit(url, "alpha", 3)
        assert ("storeMemory", "alice", "http-agent", "success") in alpha_rows
        assert ("retrieveMemory", "alice", "http-agent", "success") in alpha_rows
        assert ("indexStatus", "ops", "raw-agent", "success") in alpha_rows
        beta_rows = _audit(url, "beta", 4)
        assert ("storeMemory", "bob", "http-agent", "success") in beta_rows
        assert ("indexStatus", "bob", "raw-agent", "success") in beta_rows
        assert ("indexStatus", "ops", "raw-agent", "success") in _audit(url, "home", 1)
        with psycopg.connect(url) as conn:
            counted = [
                conn.execute(f"SELECT count(*) FROM flowbaby_{ns}.memories".encode()).fetchone()[0]  # type: ignore[index]
                for ns in ("alpha", "beta", "home")
            ]
        assert counted == [1, 1, 0]


def test_a_team_server_beyond_loopback_still_needs_tls(postgres: PostgresServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = Server(workspace, "--host", "0.0.0.0", "--allow-remote", env=_env(postgres.url()))
    assert server.proc.wait(60) == 2
    assert "refusing to bind 0.0.0.0 without TLS" in server.log.read_text()
