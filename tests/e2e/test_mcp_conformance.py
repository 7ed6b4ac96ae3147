"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/e2e/conformance/package.json, installed by `npm ci` like the other npm test tools; it needs Node
>= 22: the one code-server brings in ~/.cache/flowbaby, or the system's) against `flowbaby serve`'s
/mcp, every server scenario that applies to flowbaby (the rest call the suite's own reference tools:
`test_image_content`, sampling, elicitation, …).

The suite speaks streamable HTTP only (`conformance server --url`) and sends no Authorization header,
so a loopback relay in this test adds the workspace's bearer token; Host and Origin pass through
unchanged except the relay's own address, so the DNS-rebinding scenario still reaches serve's check.
For `flowbaby mcp` (stdio) a second relay is the HTTP end: each JSON-RPC message the suite posts is
written to a fresh `flowbaby mcp` subprocess's stdin as one line, and the reply with its id is read
from its stdout and answered as JSON (notifications in between are dropped); the HTTP-only scenarios
(SSE streams, DNS rebinding) do not apply there.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from bridge.client import PROJECT_ROOT
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.support.vscode_tools import ensure_conformance_npm

pytestmark = pytest.mark.slow

SUITE = PROJECT_ROOT / "tests" / "e2e" / "conformance"
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]
"""The server scenarios that apply: they check the protocol, not a reference tool, resource or prompt."""
STDIO_SCENARIOS = [
    name for name in SCENARIOS if name not in ("server-sse-multiple-streams", "dns-rebinding-protection")
]
TOKEN = "conformance-token"


def _node() -> str | None:
    cached = sorted(Path.home().glob(".cache/flowbaby/code-server-*/node_modules/node/bin/node"))
    for node in [*map(str, cached), shutil.which("node") or ""]:
        if (
            node
            and subprocess.run(
                [node, "-e", "process.exit(Number(process.versions.node.split('.')[0]) >= 22 ? 0 : 1)"]
            ).returncode
            == 0
        ):
            return node
    return None


async def _request_body(receive: Any) -> bytes:
    """An ASGI request's whole body, however many messages it came in (both apps here answer it whole)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _relay(target: str) -> Any:
    """An ASGI app that forwards every request to `target` with the bearer token, streaming the reply."""
    client = httpx.AsyncClient(timeout=None)
    netloc = target.split("//", 1)[1].encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await _request_body(receive)
        own = f"127.0.0.1:{scope['server'][1]}".encode()
        headers = [
            (k, netloc if k == b"host" and v == own else v) for k, v in scope["headers"] if k != b"authorization"
        ]
        url = target + scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        request = client.build_request(
            scope["method"], url, headers=headers + [(b"authorization", f"Bearer {TOKEN}".encode())], content=body
        )
        reply = await client.send(request, stream=True)
        skip = {b"content-length", b"transfer-encoding", b"connection"}
        await send(
            {
                "type": "http.response.start",
                "status": reply.status_code,
                "headers": [(k, v) for k, v in reply.headers.raw if k.lower() not in skip],
            }
        )
        async for chunk in reply.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        await reply.aclose()

    return app


def _stdio_relay(workspace: Path) -> tuple[Any, list[subprocess.Popen[bytes]]]:
    """An ASGI app that is streamable HTTP in JSON-response mode in front of `flowbaby mcp`."""
    started: list[subprocess.Popen[bytes]] = []
    lock = threading.Lock()
    command = [sys.executable, "-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(workspace)]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_BUILD_GRAPH": "0"}

    def exchange(message: dict[str, Any]) -> dict[str, Any] | None:
        with lock:
            if not started:
                started.append(
                    subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd="/")
                )
            proc = started[-1]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" not in message or "method" not in message:
                return None
            while True:
                line = proc.stdout.readline()
                assert line, "flowbaby mcp closed its stdout"
                reply = json.loads(line)
                if reply.get("id") == message["id"] and ("result" in reply or "error" in reply):
                    return dict(reply)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await _request_body(receive)
        if scope["method"] != "POST":
            status = 405 if scope["method"] == "GET" else 200
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        reply = await asyncio.to_thread(exchange, json.loads(body))
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"stdio")]
        await send({"type": "http.response.start", "status": 202 if reply is None else 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if reply is None else json.dumps(reply).encode()})

    return app, started


@pytest.fixture
def relay() -> Iterator[Any]:
    servers: list[uvicorn.Server] = []

    def start(target: Any) -> str:
        app = _relay(target) if isinstance(target, str) else target
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
        threading.Thread(target=server.run, daemon=True).start()
        servers.append(server)
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the relay never started"
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.should_exit = True


def _suite() -> tuple[str, Path]:
    node = _node()
    if node is None:
        pytest.skip("the conformance suite needs Node >= 22 (make e2e-setup installs code-server's)")
    problem = ensure_conformance_npm()
    if problem:
        pytest.skip(problem)
    return node, SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def test_conformance_suite_over_streamable_http(serve, relay, workspace: Path, tmp_path: Path) -> None:  # noqa: F811
    node, cli = _suite()
    server = serve(workspace, env={"FLOWBABY_API_TOKEN": TOKEN, "FLOWBABY_BUILD_GRAPH": "0"})
    _run_suite(node, cli, relay(server.url) + "/mcp", SCENARIOS, tmp_path)


def test_conformance_suite_over_stdio(relay, workspace: Path, tmp_path: Path) -> None:
    node, cli = _suite()
    for scenario in STDIO_SCENARIOS:  # a fresh `flowbaby mcp` per scenario: each run starts with initialize
        app, started = _stdio_relay(workspace)
        try:
            _run_suite(node, cli, relay(app) + "/mcp", [scenario], tmp_path)
        finally:
            for proc in started:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(30)


def _run_suite(node: str, cli: Path, url: str, scenarios: list[str], tmp_path: Path) -> None:
    results: dict[str, Any] = {}
    for scenario in scenarios:
        out = tmp_path / scenario
        done = subprocess.run(
            [node, str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out), "--verbose"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
        results[scenario] = (done.returncode, done.stdout[-3000:] + done.stderr[-2000:])
    failed = {name: text for name, (code, text) in results.items() if code != 0}
    assert not failed, json.dumps(failed, indent=1)
