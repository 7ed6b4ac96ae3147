"""Where a local front finds its team server (and which token files it refuses), and how the
server's error bodies become the same contract errors again."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.core.contract import (
    BackgroundStatusRequest,
    ConfirmSupersessionRequest,
    ErrorCode,
    FlowbabyError,
    FlowbabyIngestRequest,
    ForgetMemoryRequest,
    ImportMemoriesRequest,
    RestoreMemoryRequest,
    RetrievalError,
    RetrievalErrorCode,
)
from graph.core.methods import TYPED, request_of
from graph.core.workspace import resolve_workspace
from graph.remote import connect_workspace
from graph.remote.client import RemoteService, failure_from_body
from graph.remote.settings import server_file, server_settings


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for key in list(os.environ):
        if key.startswith("FLOWBABY_"):
            monkeypatch.delenv(key)
    root = tmp_path / "My Project"
    root.mkdir()
    return resolve_workspace(root)


def _token(tmp_path: Path, mode: int = 0o600, name: str = "token") -> Path:
    path = tmp_path / name
    path.write_text("s3cret\n")
    path.chmod(mode)
    return path


def test_no_setting_serves_locally(paths: Any) -> None:
    assert server_settings(paths) is None


def test_environment_names_the_server(paths: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBABY_SERVER_URL", "https://memory.example.com/")
    monkeypatch.setenv("FLOWBABY_SERVER_TOKEN_FILE", str(_token(tmp_path)))
    server = server_settings(paths)
    assert server is not None
    assert (server.url, server.token, server.namespace) == ("https://memory.example.com", "s3cret", "my-project")
    monkeypatch.setenv("FLOWBABY_SERVER_NAMESPACE", "payments")
    assert server_settings(paths).namespace == "payments"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("url", "problem"),
    [("http://memory.example.com", "plain http"), ("ftp://x", "http(s)"), ("http://127.0.0.1:8766", None)],
)
def test_plain_http_only_to_loopback(
    paths: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, problem: str | None
) -> None:
    monkeypatch.setenv("FLOWBABY_SERVER_URL", url)
    monkeypatch.setenv("FLOWBABY_SERVER_TOKEN", "t")
    if problem is None:
        assert server_settings(paths) is not None
        return
    with pytest.raises(FlowbabyError, match="plain http|http\\(s\\)"):
        server_settings(paths)


def test_token_files_others_can_read_or_swap_are_refused(
    paths: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBABY_SERVER_URL", "https://memory.example.com")
    monkeypatch.setenv("FLOWBABY_SERVER_TOKEN_FILE", str(_token(tmp_path, 0o644)))
    with pytest.raises(FlowbabyError, match="mode 0644, not 0600"):
        server_settings(paths)
    link = tmp_path / "link"
    link.symlink_to(_token(tmp_path, name="real"))
    monkeypatch.setenv("FLOWBABY_SERVER_TOKEN_FILE", str(link))
    with pytest.raises(FlowbabyError, match="symlink"):
        server_settings(paths)
    monkeypatch.delenv("FLOWBABY_SERVER_TOKEN_FILE")
    with pytest.raises(FlowbabyError, match="gives a token"):
        server_settings(paths)


def test_connect_writes_a_private_settings_file_without_the_token(paths: Any, tmp_path: Path) -> None:
    token = _token(tmp_path)
    reply = connect_workspace(str(paths.root), "https://memory.example.com", str(token), "team-a")
    assert reply["namespace"] == "team-a"
    path = server_file(paths)
    assert path.stat().st_mode & 0o777 == 0o600
    record = json.loads(path.read_text())
    assert record == {"url": "https://memory.example.com", "tokenFile": str(token), "namespace": "team-a"}
    assert server_settings(paths).token == "s3cret"  # type: ignore[union-attr]
    path.chmod(0o644)  # as a committed file would be after a clone
    with pytest.raises(FlowbabyError, match="server settings"):
        server_settings(paths)
    assert connect_workspace(str(paths.root), None, None, None)["removed"] is True
    assert server_settings(paths) is None


def test_error_bodies_become_the_same_contract_errors() -> None:
    retrieval = RetrievalError(RetrievalErrorCode.RATE_LIMIT_EXCEEDED, "Too many", retryAfterSec=12)
    back = failure_from_body(retrieval.to_response(), 429, retrieval=True)
    assert isinstance(back, RetrievalError) and back.to_response() == retrieval.to_response()
    ingest = FlowbabyError(ErrorCode.INVALID_PAYLOAD, 'Field "context": required', fields=["context"])
    back = failure_from_body(ingest.to_response(), 400, retrieval=False)
    assert isinstance(back, FlowbabyError) and back.to_response() == ingest.to_response()
    unknown = failure_from_body({"success": False, "error": "New", "errorCode": "A_LATER_SERVERS_CODE"}, 503, False)
    assert unknown.code is ErrorCode.FLOWBABY_ERROR and unknown.details["serverErrorCode"] == "A_LATER_SERVERS_CODE"
    away = failure_from_body({"success": False, "error": "DB away", "errorCode": "DATABASE_UNAVAILABLE"}, 503, False)
    assert away.code is ErrorCode.DATABASE_UNAVAILABLE
    plain = failure_from_body(None, 502, retrieval=True)
    assert isinstance(plain, RetrievalError) and plain.code is RetrievalErrorCode.FLOWBABY_ERROR


def test_every_request_carries_the_token_and_the_namespace(paths: Any) -> None:
    from graph.remote.settings import ServerSettings

    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/api/agent/background/op_1":
            return httpx.Response(404, json=FlowbabyError(ErrorCode.NOT_FOUND, "No operation").to_response())
        return httpx.Response(200, json={"success": True, "topicId": "a/b", "versions": []})

    async def run() -> None:
        server = ServerSettings("https://memory.example.com", "s3cret", "team-a", "test")
        service = RemoteService(paths, server, transport=httpx.MockTransport(answer))
        assert (await service.background_status(BackgroundStatusRequest(operationId="op_1"))).status == "unknown"
        await service.memory_versions("a/b")
        with pytest.raises(FlowbabyError) as caught:
            await request_of(service, TYPED["background_status"], {"operationId": 5})  # checked before a byte is sent
        assert caught.value.code is ErrorCode.INVALID_PAYLOAD
        await service.close()

    asyncio.run(run())
    assert [r.url.raw_path for r in seen] == [b"/api/agent/background/op_1", b"/api/agent/memories/a%2Fb"]
    for request in seen:
        assert request.headers["authorization"] == "Bearer s3cret"
        assert request.headers["x-flowbaby-namespace"] == "team-a"


STAMP = "2026-01-01T00:00:00.000Z"
EXPORTED = {
    "topic": "T",
    "context": "C",
    "topicId": "t",
    "version": 1,
    "memoryId": "m",
    "status": "Active",
    "createdAt": STAMP,
    "updatedAt": STAMP,
    "stagedAt": STAMP,
}
STAGED = {"success": True, "operationId": "op_1", "ingested_chars": 2}
TYPED_REPLIES: dict[str, Any] = {
    "/api/agent/ingest": {
        **STAGED,
        "staged": True,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "metadata": {
            "topic_id": "t",
            "session_id": None,
            "plan_id": None,
            "status": "Active",
            "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
        },
        "staging_duration_sec": 0.001,
        "ingestion_metrics": {},
    },
    "/api/agent/memories": {**STAGED, "summary_id": "s", "duration_ms": 1.0},
    "/api/agent/import": {"success": True, "dryRun": False, "imported": 1, "skipped": 0, "queuedOperations": 1},
    "/api/agent/supersessions/confirm": {
        "success": True,
        "topicId": "a",
        "memoryId": "m",
        "status": "Superseded",
        "supersededBy": "b",
    },
    "/api/agent/memories/restore": {
        "success": True,
        "topicId": "a",
        "id": "r",
        "decision": "replace",
        "restored": [],
        "restoredAt": "2026-01-01T00:00:00.000Z",
    },
    "/api/agent/memories/forget": {
        "success": True,
        "dryRun": False,
        "forgetId": None,
        "topics": 0,
        "versions": 0,
        "topicIds": [],
        "pending": [],
    },
}
"""What the stand-in server answers a typed operation's route: its reply model is checked."""


def test_each_body_operation_posts_its_params_to_the_tables_route(paths: Any) -> None:
    """The operations whose server route takes the JSON body (BODY_ROUTES) are made from the method
    table: each posts exactly the caller's params there; the local owner's arguments stay here."""
    from graph.core.methods import BODY_ROUTES
    from graph.remote.settings import ServerSettings

    seen: list[tuple[str, str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, json.loads(request.content)))
        return httpx.Response(200, json=TYPED_REPLIES.get(request.url.path, {"success": True}))

    async def run() -> None:
        server = ServerSettings("https://memory.example.com", "s3cret", "team-a", "test")
        service = RemoteService(paths, server, transport=httpx.MockTransport(answer))
        await service.ingest(FlowbabyIngestRequest(topic="t", context="c"), bulk=True, origin="/here")
        await service.store_memory(FlowbabyIngestRequest(topic="s", context="c"), origin="/here")
        await service.confirm_supersession(ConfirmSupersessionRequest(olderTopicId="a", newerTopicId="b"))
        await service.restore_memory(RestoreMemoryRequest(topicId="a"))
        await service.forget_memory(ForgetMemoryRequest.model_validate({"filter": {"status": ["Active"]}}))
        await service.import_memories(ImportMemoriesRequest.model_validate({"memories": [EXPORTED]}))
        await service.close()

    asyncio.run(run())
    assert seen == [
        ("POST", "/api/agent/ingest", {"topic": "t", "context": "c"}),
        ("POST", "/api/agent/memories", {"topic": "s", "context": "c"}),
        ("POST", "/api/agent/supersessions/confirm", {"olderTopicId": "a", "newerTopicId": "b"}),
        ("POST", "/api/agent/memories/restore", {"topicId": "a"}),
        ("POST", "/api/agent/memories/forget", {"filter": {"status": ["Active"]}}),
        ("POST", "/api/agent/import", {"memories": [EXPORTED]}),
    ]
    assert [tuple(m.http.split(" ")) for m in BODY_ROUTES] == [(verb, path) for verb, path, _ in seen]


@pytest.mark.parametrize(
    "content",
    [
        "https://dev:hunter2-gh@github.com\n",  # ~/.git-credentials
        "fbt_0123456789ab_first\nfbt_0123456789ab_second\n",  # two lines
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        "LLM_API_KEY=sk-mine\n",
        "Bearer abc",
    ],
)
def test_a_token_file_must_hold_one_token(
    paths: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    path = tmp_path / "not-a-token"
    path.write_text(content)
    path.chmod(0o600)
    monkeypatch.setenv("FLOWBABY_SERVER_URL", "https://memory.example.com")
    monkeypatch.setenv("FLOWBABY_SERVER_TOKEN_FILE", str(path))
    with pytest.raises(FlowbabyError, match="does not hold a single bearer token") as caught:
        server_settings(paths)
    assert content.strip().splitlines()[0][-6:] not in str(caught.value)  # the content is never echoed


def test_token_shapes_that_are_accepted(paths: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWBABY_SERVER_URL", "https://memory.example.com")
    for token in ("fbt_0123456789ab_" + "Zx-9_" * 8 + "Q", "team-token-0123456789", "dGVhbTp0b2tlbg=="):
        path = tmp_path / "token"
        path.write_text(f"  {token}\n")
        path.chmod(0o600)
        monkeypatch.setenv("FLOWBABY_SERVER_TOKEN_FILE", str(path))
        assert server_settings(paths).token == token  # type: ignore[union-attr]


def test_a_reply_that_is_not_the_operations_model_is_a_contract_failure(paths: Any) -> None:
    """A typed operation's reply is read into its model: a server answering another shape (another version,
    a proxy) is FLOWBABY_ERROR, never a pydantic error escaping to the front."""
    from graph.remote.settings import ServerSettings

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"success": True, "memories": "many"})

    async def run() -> FlowbabyError:
        server = ServerSettings("https://memory.example.com", "s3cret", "team-a", "test")
        service = RemoteService(paths, server, transport=httpx.MockTransport(answer))
        try:
            with pytest.raises(FlowbabyError) as caught:
                await service.health()
            return caught.value
        finally:
            await service.close()

    failure = asyncio.run(run())
    assert failure.code is ErrorCode.FLOWBABY_ERROR and "HealthResponse" in failure.message
