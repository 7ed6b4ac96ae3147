"""Issue 12, security and protocol items, in process: trusted settings sources (1), the Host and
Origin guard and the public health (2), the in-flight cap and log limits (3), body and batch
caps (4), strict JSON on the bridge and HTTP (5), and TLS for remote binding (7)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import create_app
from api.auth import resolve_token
from api.guard import MAX_BODY_BYTES, MAX_UNAUTHENTICATED_IN_FLIGHT, BodyLimit, HostRule, InFlightLimit, RateLimitedLog
from api.server import bind_refusal
from bridge.server import MAX_BATCH, Bridge, ProtocolWriter
from graph.core import jsonwire
from graph.core.contract import BackgroundOperations, FlowbabyError
from graph.core.settings import load_settings
from graph.core.workspace import WorkspacePaths

TOKEN = "t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for key in list(os.environ):
        if key.startswith(("LLM_", "FLOWBABY_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield monkeypatch


def _workspace(tmp_path: Path, env_text: str = "") -> WorkspacePaths:
    root = tmp_path / "repo"
    (root / ".flowbaby").mkdir(parents=True)
    if env_text:
        (root / ".env").write_text(env_text)
    return WorkspacePaths(root)


# -- 1. one trusted source for the LLM settings and the token ---------------------------------


def test_a_committed_endpoint_never_receives_the_key_from_the_environment(tmp_path: Path, clean_env) -> None:
    paths = _workspace(tmp_path, "LLM_ENDPOINT=http://127.0.0.1:9/v1\n")
    clean_env.setenv("LLM_PROVIDER", "openai")
    clean_env.setenv("LLM_API_KEY", "sk-user")
    llm = load_settings(paths)
    assert (llm.llm.endpoint, llm.llm.api_key, llm.llm_source) == ("", "sk-user", "environment")


def test_an_untrusted_workspace_env_chooses_no_llm(tmp_path: Path, clean_env) -> None:
    env = "LLM_PROVIDER=openai\nLLM_API_KEY=sk-theirs\nLLM_ENDPOINT=http://127.0.0.1:9/v1\nFLOWBABY_MAX_QUEUED=7\n"
    paths = _workspace(tmp_path, env)
    settings = load_settings(paths)
    assert settings.llm_source == "untrusted-workspace-ignored"
    assert settings.llm.offline and not settings.llm.endpoint and not settings.llm.api_key
    assert settings.max_queued == 7  # the harmless keys still count


def test_a_trusted_workspace_env_is_taken_as_one_unit(tmp_path: Path, clean_env) -> None:
    paths = _workspace(tmp_path, "LLM_PROVIDER=custom\nLLM_MODEL=m\nLLM_ENDPOINT=http://127.0.0.1:9/v1\n")
    config = tmp_path / "config" / "flowbaby"
    config.mkdir(parents=True)
    (config / "trusted_workspaces").write_text(f"# mine\n{paths.root}\n")
    settings = load_settings(paths)
    assert (settings.llm_source, settings.llm.provider, settings.llm.endpoint) == (
        "workspace",
        "custom",
        "http://127.0.0.1:9/v1",
    )
    clean_env.setenv("LLM_API_KEY", "sk-user")  # the environment then wins, whole: no endpoint from the repo
    settings = load_settings(paths)
    assert (settings.llm_source, settings.llm.endpoint, settings.llm.provider) == ("environment", "", "")


def test_cognee_keeps_its_own_vectors_only_when_asked(tmp_path: Path, clean_env) -> None:
    assert not load_settings(_workspace(tmp_path / "default")).cognee_vectors
    paths = _workspace(tmp_path, "FLOWBABY_COGNEE_VECTORS=1\n")
    assert load_settings(paths).cognee_vectors
    clean_env.setenv("FLOWBABY_COGNEE_VECTORS", "0")  # the environment overrides the file
    assert not load_settings(paths).cognee_vectors
    clean_env.setenv("FLOWBABY_COGNEE_VECTORS", "yes")
    with pytest.raises(FlowbabyError, match="FLOWBABY_COGNEE_VECTORS takes 0 or 1"):
        load_settings(paths)


def test_graph_building_is_on_unless_switched_off(tmp_path: Path, clean_env) -> None:
    assert load_settings(_workspace(tmp_path / "default")).build_graph
    paths = _workspace(tmp_path, "FLOWBABY_BUILD_GRAPH=0\n")
    assert not load_settings(paths).build_graph  # not guarded: an untrusted .env may switch it off
    clean_env.setenv("FLOWBABY_BUILD_GRAPH", "1")  # the environment overrides the file
    assert load_settings(paths).build_graph
    clean_env.setenv("FLOWBABY_BUILD_GRAPH", "off")
    with pytest.raises(FlowbabyError, match="FLOWBABY_BUILD_GRAPH takes 0 or 1, got 'off'"):
        load_settings(paths)


def test_a_writable_allow_list_trusts_nothing(tmp_path: Path, clean_env) -> None:
    paths = _workspace(tmp_path, "LLM_PROVIDER=openai\n")
    config = tmp_path / "config" / "flowbaby"
    config.mkdir(parents=True)
    (config / "trusted_workspaces").write_text(f"{paths.root}\n")
    (config / "trusted_workspaces").chmod(0o666)
    assert load_settings(paths).llm_source == "untrusted-workspace-ignored"
    clean_env.setenv("FLOWBABY_TRUSTED_WORKSPACES", str(paths.root))
    assert load_settings(paths).llm_source == "workspace"


def test_an_untrusted_env_cannot_point_the_embedder_at_its_own_model(tmp_path: Path, clean_env) -> None:
    (tmp_path / "model").mkdir()
    paths = _workspace(tmp_path, f"FLOWBABY_EMBEDDING_MODEL={tmp_path / 'model'}\n")
    assert load_settings(paths).embedding_model != str(tmp_path / "model")


def test_an_untrusted_env_cannot_choose_the_api_token(tmp_path: Path, clean_env) -> None:
    paths = _workspace(tmp_path, "FLOWBABY_API_TOKEN=known-to-the-repo\n")
    token, source = resolve_token(paths)
    assert token != "known-to-the-repo" and source.endswith("api_token")
    clean_env.setenv("FLOWBABY_TRUSTED_WORKSPACES", str(paths.root))
    assert resolve_token(paths) == ("known-to-the-repo", "FLOWBABY_API_TOKEN (trusted workspace .env)")


@pytest.mark.parametrize("kind", ["mode 0644", "symlink"])
def test_a_committed_token_file_is_refused(tmp_path: Path, clean_env, kind: str) -> None:
    paths = _workspace(tmp_path)
    token_file = paths.data / "api_token"
    if kind == "symlink":
        target = tmp_path / "elsewhere"
        target.write_text("known\n")
        target.chmod(0o600)
        token_file.symlink_to(target)
    else:
        token_file.write_text("known\n")
        token_file.chmod(0o644)
    with pytest.raises(FlowbabyError, match="Refusing the API token file"):
        resolve_token(paths)
    token_file.unlink()
    token, _ = resolve_token(paths)  # once removed, a private one is generated
    assert token != "known" and resolve_token(paths)[0] == token


# -- 2. Host / Origin guard, public health, no CDN docs ---------------------------------------


class _Service:
    async def health(self) -> dict[str, Any]:
        return {
            "success": True,
            "status": "ready",
            "version": "0.1.0",
            "workspace": "/home/me/secret-project",
            "pid": 4242,
            "embedderLoaded": True,
            "workerPid": None,
            "llm": "offline-extractor",
            "memories": 0,
            "pendingOperations": 0,
            "uptimeSec": 1.0,
            "llmSource": "default",
        }

    async def background_status(self, request: Any) -> BackgroundOperations:
        return BackgroundOperations(operations=[], counts={}, llmUsage={}, graphBuilding=True)

    async def ingest(self, params: Any) -> dict[str, Any]:
        return {"success": True, "echo": len(json.dumps(params))}

    async def retrieve(self, params: Any, markdown: bool = False) -> dict[str, Any]:
        return {"success": True}


def _call(app: Any, method: str, path: str, host: str = "127.0.0.1:8766", **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(go())


def test_rebinding_hosts_and_foreign_origins_are_refused() -> None:
    app = create_app(_Service(), TOKEN)  # type: ignore[arg-type]
    for host in ("evil.example:8766", "evil.example", "127.0.0.1.nip.io:8766", "10.0.0.5:8766"):
        reply = _call(app, "GET", "/api/agent/background", host=host, headers=AUTH)
        assert reply.status_code == 421 and reply.json()["errorCode"] == "UNAUTHORIZED", host
    for host in ("127.0.0.1:8766", "localhost:8766", "[::1]:8766", "127.0.0.2"):
        assert _call(app, "GET", "/api/agent/background", host=host, headers=AUTH).status_code == 200, host
    foreign = _call(app, "GET", "/api/agent/background", headers={**AUTH, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    local = _call(app, "GET", "/api/agent/background", headers={**AUTH, "Origin": "http://localhost:3000"})
    assert local.status_code == 200


def test_remote_binding_adds_only_the_configured_host() -> None:
    rule = HostRule("10.1.2.3")
    assert rule.allows("10.1.2.3:8766") and rule.allows("127.0.0.1:8766")
    assert not rule.allows("evil.example:8766") and not rule.allows("10.1.2.4")
    wildcard = HostRule("0.0.0.0")
    assert wildcard.allows("192.168.1.9:8766") and wildcard.allows("[fe80::1]:8766")
    assert not wildcard.allows("evil.example:8766")


def test_health_without_the_token_reveals_no_path_or_pid() -> None:
    app = create_app(_Service(), TOKEN)  # type: ignore[arg-type]
    public = _call(app, "GET", "/api/health")
    assert public.status_code == 200 and public.json() == {"success": True, "status": "ready", "version": "0.1.0"}
    full = _call(app, "GET", "/api/health", headers=AUTH).json()
    assert full["workspace"] == "/home/me/secret-project" and full["pid"] == 4242


def test_docs_are_off_unless_asked_for() -> None:
    assert _call(create_app(_Service(), TOKEN), "GET", "/docs").status_code == 404  # type: ignore[arg-type]
    assert _call(create_app(_Service(), TOKEN), "GET", "/redoc").status_code in {401, 404}  # type: ignore[arg-type]
    assert _call(create_app(_Service(), TOKEN), "GET", "/openapi.json").status_code == 200  # type: ignore[arg-type]
    assert _call(create_app(_Service(), TOKEN, docs=True), "GET", "/docs").status_code == 200  # type: ignore[arg-type]


# -- 3. in-flight cap and rate-limited logging -------------------------------------------------


def test_requests_past_the_in_flight_cap_get_503() -> None:
    release = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def go() -> list[int]:
        app = InFlightLimit(slow, limit=2)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=AUTH) as c:
            first = [asyncio.create_task(c.get("/")) for _ in range(2)]
            await asyncio.sleep(0.05)
            third = await c.get("/")
            release.set()
            return [third.status_code, third.headers["retry-after"] == "1", *[(await t).status_code for t in first]]

    assert asyncio.run(go()) == [503, True, 200, 200]


def test_callers_without_a_token_have_their_own_small_quota() -> None:
    """Issue 26 item 8: 40 requests without credentials held in flight take 8 places of their own;
    a token holder still gets one of the 32."""
    release = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def go() -> tuple[list[int], int]:
        app = InFlightLimit(slow)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            anonymous = [asyncio.create_task(c.get("/api/health")) for _ in range(40)]
            await asyncio.sleep(0.1)
            holder = asyncio.create_task(c.get("/api/agent/background", headers=AUTH))
            await asyncio.sleep(0.05)
            release.set()
            return sorted([(await t).status_code for t in anonymous]), (await holder).status_code

    statuses, holder = asyncio.run(go())
    assert statuses.count(200) == MAX_UNAUTHENTICATED_IN_FLIGHT and statuses.count(503) == 40 - 8
    assert holder == 200


def test_a_flood_of_one_message_is_logged_a_few_times() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("flowbaby.test.flood")
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(stream))
    logger.addFilter(RateLimitedLog(burst=5, window=60))
    for _ in range(10_000):
        logger.error("socket.accept() out of system resource")
    assert stream.getvalue().count("\n") == 5


# -- 4. body and batch caps --------------------------------------------------------------------


def test_an_oversized_body_is_refused_before_it_is_read() -> None:
    app = create_app(_Service(), TOKEN)  # type: ignore[arg-type]
    big = _call(app, "POST", "/api/agent/ingest", headers=AUTH, content=b" " * (MAX_BODY_BYTES + 1))
    assert big.status_code == 413 and big.json()["errorCode"] == "INVALID_PAYLOAD"
    assert big.headers["connection"] == "close"
    retrieval = _call(app, "POST", "/api/agent/retrieve", headers=AUTH, content=b" " * (MAX_BODY_BYTES + 1))
    assert retrieval.status_code == 413 and retrieval.json()["error"] == "INVALID_REQUEST"


def test_a_chunked_body_is_counted_as_it_arrives() -> None:
    sent: list[dict[str, Any]] = []
    chunks = iter([b"x" * 1000] * 5)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": next(chunks), "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def never(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app must not run")

    scope = {"type": "http", "path": "/api/agent/ingest", "headers": []}
    asyncio.run(BodyLimit(never, limit=2500)(scope, receive, send))
    assert sent[0]["status"] == 413


class _Bridged:
    def add_operation_listener(self, listener: Any) -> None:
        pass

    async def health(self) -> dict[str, Any]:
        return {"success": True}

    def __getattr__(self, name: str) -> Any:
        return self.health


def _bridge_replies(*lines: bytes) -> list[bytes]:
    out = io.BytesIO()
    bridge = Bridge(_Bridged(), ProtocolWriter(out), 5.0)  # type: ignore[arg-type]

    async def go() -> None:
        for line in lines:
            await bridge.handle_line(line)

    asyncio.run(go())
    return out.getvalue().splitlines()


def test_a_bridge_batch_past_the_cap_is_one_invalid_request() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "health"}
    (reply,) = _bridge_replies(json.dumps([call] * (MAX_BATCH + 1)).encode())
    assert jsonwire.loads(reply)["error"]["code"] == -32600
    (ok,) = _bridge_replies(json.dumps([call] * MAX_BATCH).encode())
    assert len(jsonwire.loads(ok)) == MAX_BATCH


# -- 5. strict JSON ----------------------------------------------------------------------------

HOSTILE = {
    "100k-deep": b"[" * 100_000 + b"]" * 100_000,
    "100k-deep params": b'{"jsonrpc":"2.0","id":1,"method":"health","params":'
    + b'{"a":' * 100_000
    + b"1"
    + b"}" * 100_001,
    "5,000-digit id": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"health"}',
    "1e400 id": b'{"jsonrpc":"2.0","id":1e400,"method":"health"}',
    "NaN id": b'{"jsonrpc":"2.0","id":NaN,"method":"health"}',
    "-Infinity id": b'{"jsonrpc":"2.0","id":-Infinity,"method":"health"}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_json_on_the_bridge_is_one_strict_parse_error(name: str) -> None:
    (reply,) = _bridge_replies(HOSTILE[name])
    message = jsonwire.loads(reply)  # strict: no NaN, no Infinity
    assert message["id"] is None and message["error"]["code"] == -32700


def test_a_result_that_is_not_json_becomes_an_internal_error() -> None:
    out = io.BytesIO()
    ProtocolWriter(out).send({"jsonrpc": "2.0", "id": 3, "result": {"score": float("nan")}})
    assert jsonwire.loads(out.getvalue())["error"]["code"] == -32603


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_json_over_http_is_a_json_400(name: str) -> None:
    app = create_app(_Service(), TOKEN)  # type: ignore[arg-type]
    for path, field, code in (
        ("/api/agent/ingest", "errorCode", "INVALID_PAYLOAD"),
        ("/api/agent/retrieve", "error", "INVALID_REQUEST"),
    ):
        reply = _call(app, "POST", path, headers=AUTH, content=HOSTILE[name])
        assert reply.status_code == 400 and jsonwire.loads(reply.content)[field] == code, (path, reply.text[:200])


# -- 7. no remote binding in clear -------------------------------------------------------------


def test_remote_binding_needs_tls() -> None:
    assert bind_refusal("127.0.0.1", False, None) is None
    assert "--allow-remote" in (bind_refusal("0.0.0.0", False, None) or "")
    assert "--tls-cert" in (bind_refusal("0.0.0.0", True, None) or "")
    assert bind_refusal("0.0.0.0", True, ("cert.pem", "key.pem")) is None
