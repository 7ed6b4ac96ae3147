"""Per-user tokens (format, hash, scope, cache) and the namespace router of the HTTP front, on
an in-memory token store and a recording ASGI app; the real server and database are exercised
in tests/integration/test_team_auth.py."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from api.tenancy import AUTHORIZED, CURRENT, Caller, NamespaceRouter, TeamTokens, Tenancy, WorkspaceToken
from graph.core.api_tokens import GrantCache, TokenRecord, check_scope, digest, issue, token_id_of, verify
from graph.core.audit import AUDIT_USER
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.namespaces import namespace_problem


class MemoryTokens:
    """The TokenStore protocol in a dict, counting lookups."""

    def __init__(self) -> None:
        self.rows: dict[str, TokenRecord] = {}
        self.finds = 0

    def create(self, user: str, namespaces: Sequence[str], token_id: str, token_hash: bytes) -> TokenRecord:
        record = TokenRecord(token_id, user, tuple(namespaces), "2026-12-01T00:00:00+00:00", None, token_hash)
        self.rows[token_id] = record
        return record

    def find(self, token_id: str) -> TokenRecord | None:
        self.finds += 1
        return self.rows.get(token_id)

    def records(self) -> list[TokenRecord]:
        return list(self.rows.values())

    def revoke(self, *, token_id: str | None = None, user: str | None = None) -> list[str]:
        hit = [r for r in self.rows.values() if r.revoked_at is None and (r.token_id == token_id or r.user == user)]
        for r in hit:
            self.rows[r.token_id] = TokenRecord(r.token_id, r.user, r.namespaces, r.created_at, "now", r.token_hash)
        return [r.token_id for r in hit]

    def close(self) -> None:
        pass


def test_a_token_is_stored_only_as_its_sha256_and_verifies_to_its_scope() -> None:
    store = MemoryTokens()
    record, token = issue(store, "alice", ["beta", "alpha", "alpha"])
    assert token.startswith("fbt_") and token_id_of(token) == record.token_id and len(token) == 4 + 12 + 1 + 43
    assert record.namespaces == ("alpha", "beta")
    assert record.token_hash == hashlib.sha256(token.encode()).digest() and token.encode() not in repr(record).encode()
    grant = verify(store, token)
    assert grant is not None and grant.user == "alice"
    assert grant.allows("alpha") and grant.allows("beta") and not grant.allows("gamma")
    wildcard = verify(store, issue(store, "root", ["*"])[1])
    assert wildcard is not None and wildcard.namespaces is None and wildcard.allows("anything")


def test_wrong_secret_unknown_id_malformed_and_revoked_tokens_verify_to_nothing() -> None:
    store = MemoryTokens()
    record, token = issue(store, "bob", ["beta"])
    other = token[:-1] + ("A" if token[-1] != "A" else "B")
    for bad in (other, "fbt_000000000000_" + token[-43:], "fbt_short", "Bearer x", "", token[4:]):
        assert verify(store, bad) is None
    assert store.revoke(user="bob") == [record.token_id]
    assert verify(store, token) is None


@pytest.mark.parametrize(
    ("user", "namespaces", "problem"),
    [
        ("", ["a"], "user name"),
        ("al ice", ["a"], "user name"),
        ("alice", [], "at least one"),
        ("alice", ["Alpha"], 'namespace "Alpha" must be'),
        ("alice", ["admin"], '"admin" is reserved'),
        ("alice", ["a" * 49], "must be 1-48"),
    ],
)
def test_scope_rules(user: str, namespaces: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check_scope(user, namespaces)


def test_namespace_rule() -> None:
    assert namespace_problem("team-a_1") is None
    for bad in ("", "-a", "A", "a/b", "a" * 49, "admin", "ä"):
        assert namespace_problem(bad), bad


def test_the_cache_answers_for_its_ttl_then_asks_again() -> None:
    cache = GrantCache(ttl_sec=0.2, entries=2)
    cache.put(b"a", None)
    assert cache.get(b"a") == (True, None)
    cache.put(b"b", None)
    cache.put(b"c", None)  # past `entries`: the oldest goes
    assert cache.get(b"a") == (False, None)
    asyncio.run(asyncio.sleep(0.25))
    assert cache.get(b"c") == (False, None)


def test_team_tokens_cache_lookups_and_see_a_revocation_after_the_ttl() -> None:
    store = MemoryTokens()
    _, token = issue(store, "carol", ["alpha"])
    auth = TeamTokens(WorkspaceToken("ws-token", "home"), store, GrantCache(ttl_sec=0.3))

    async def run() -> None:
        header = f"Bearer {token}"
        assert await auth.authenticate(header) == Caller("carol", frozenset({"alpha"}))
        assert await auth.authenticate(header) == Caller("carol", frozenset({"alpha"}))
        assert store.finds == 1
        assert await auth.authenticate("Bearer ws-token") == Caller(None, frozenset({"home"}))
        assert await auth.authenticate("Bearer nope") is None and await auth.authenticate(None) is None
        store.revoke(user="carol")
        assert await auth.authenticate(header) is not None  # cached
        await asyncio.sleep(0.35)
        assert await auth.authenticate(header) is None

    asyncio.run(run())


class FakeServices:
    """NamespaceServices' surface: 'home' is the server's own; 'closed' cannot be opened."""

    namespace = "home"

    def __init__(self) -> None:
        self.default = "svc:home"

    async def get(self, namespace: str) -> Any:
        if namespace == "closed":
            raise FlowbabyError(ErrorCode.NAMESPACE_UNAVAILABLE, "cannot be opened here")
        return f"svc:{namespace}"


async def _seen(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers what the route would see: path, service, authorized, audit user."""
    import json

    body = json.dumps([scope["path"], CURRENT.get(), AUTHORIZED.get(), AUDIT_USER.get()]).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def _client() -> httpx.AsyncClient:
    store = MemoryTokens()
    store.create("alice", ("alpha",), "a" * 12, digest("fbt_" + "a" * 12 + "_alice-secret"))
    store.create("root", ("*",), "b" * 12, digest("fbt_" + "b" * 12 + "_root-secret"))
    auth = TeamTokens(WorkspaceToken("ws", "home"), store)
    router = NamespaceRouter(_seen, Tenancy(auth, FakeServices()))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=router), base_url="http://127.0.0.1")


ALICE = {"Authorization": "Bearer fbt_" + "a" * 12 + "_alice-secret"}
ROOT = {"Authorization": "Bearer fbt_" + "b" * 12 + "_root-secret"}
WS = {"Authorization": "Bearer ws"}


@pytest.mark.parametrize(
    ("path", "headers", "status", "seen_or_code"),
    [
        ("/api/ns/alpha/agent/background", ALICE, 200, ["/api/agent/background", "svc:alpha", True, "alice"]),
        (
            "/api/agent/background",
            {**ALICE, "X-Flowbaby-Namespace": "alpha"},
            200,
            ["/api/agent/background", "svc:alpha", True, "alice"],
        ),
        ("/api/agent/background", WS, 200, ["/api/agent/background", "svc:home", True, None]),
        ("/api/ns/zeta/graph/stats", ROOT, 200, ["/api/graph/stats", "svc:zeta", True, "root"]),
        ("/api/ns/beta/agent/background", ALICE, 403, "NAMESPACE_FORBIDDEN"),
        ("/api/agent/background", ALICE, 403, "NAMESPACE_FORBIDDEN"),  # the server's own is not in scope
        ("/api/ns/alpha/agent/background", WS, 403, "NAMESPACE_FORBIDDEN"),
        ("/api/ns/Alpha/agent/background", ROOT, 400, "INVALID_NAMESPACE"),
        ("/api/ns/admin/agent/background", ROOT, 400, "INVALID_NAMESPACE"),
        ("/api/ns//agent/background", ROOT, 400, "INVALID_NAMESPACE"),
        ("/api/ns/alpha/agent/background", {**ROOT, "X-Flowbaby-Namespace": "beta"}, 400, "INVALID_NAMESPACE"),
        ("/mcp", {**ROOT, "X-Flowbaby-Namespace": "alpha"}, 200, ["/mcp", "svc:alpha", True, "root"]),
        ("/api/ns/alpha/mcp", ALICE, 200, ["/mcp", "svc:alpha", True, "alice"]),
        ("/api/ns/beta/mcp", ALICE, 403, "NAMESPACE_FORBIDDEN"),
        ("/mcp", {**ALICE, "X-Flowbaby-Namespace": "beta"}, 403, "NAMESPACE_FORBIDDEN"),
        ("/api/ns/closed/agent/background", ROOT, 503, "NAMESPACE_UNAVAILABLE"),
        ("/api/ns/alpha/agent/background", {}, 401, "UNAUTHORIZED"),
        ("/api/ns/alpha/agent/background", {"Authorization": "Bearer fbt_" + "a" * 12 + "_wrong"}, 401, "UNAUTHORIZED"),
        ("/api/ns/Bad!/health", {}, 200, ["/api/health", "svc:home", False, None]),  # public, anonymous
        ("/api/ns/beta/health", ALICE, 200, ["/api/health", "svc:home", False, None]),  # out of scope: public
        ("/api/ns/alpha/health", ALICE, 200, ["/api/health", "svc:alpha", True, "alice"]),
    ],
)
def test_the_router(path: str, headers: dict[str, str], status: int, seen_or_code: Any) -> None:
    async def call() -> httpx.Response:
        async with _client() as client:
            return await client.get(path, headers=headers)

    response = asyncio.run(call())
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json() == seen_or_code
    else:
        assert response.json()["errorCode"] == seen_or_code
        assert response.headers["connection"] == "close"


def test_a_namespace_folder_is_its_namespace_whatever_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from graph.backends.backend import namespace_for
    from graph.core.workspace import WorkspacePaths

    monkeypatch.setenv("FLOWBABY_NAMESPACE", "home")
    assert namespace_for(WorkspacePaths(Path("/srv/ws/.flowbaby/namespaces/alpha"))) == "alpha"
    assert namespace_for(WorkspacePaths(Path("/srv/ws"))) == "home"
    monkeypatch.delenv("FLOWBABY_NAMESPACE")
    assert namespace_for(WorkspacePaths(Path("/srv/My Project"))) == "my-project"
    with pytest.raises(FlowbabyError, match='folder name .*"admin" is reserved'):
        namespace_for(WorkspacePaths(Path("/srv/admin")))


def test_the_audit_file_names_a_user_only_for_a_per_user_token(tmp_path: Any) -> None:
    import json

    from graph.backends.embedded.audit_log import AuditLog

    log = AuditLog(tmp_path / "agent_audit.log")
    fields: dict[str, Any] = {"agent_name": "a", "topic": "t", "result": "success", "error_code": None}
    log.record("ingestForAgent", duration_ms=1.0, **fields)
    reset = AUDIT_USER.set("alice")
    try:
        log.record("retrieveForAgent", duration_ms=2.0, **fields)
    finally:
        AUDIT_USER.reset(reset)
    first, second = (json.loads(line) for line in (tmp_path / "agent_audit.log").read_text().splitlines())
    assert "user" not in first and second["user"] == "alice"


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("DELETE", "/api/ns/beta/agent/memories/secret", ALICE, 403),  # forget in a namespace out of scope
        ("POST", "/api/ns/beta/agent/memories/forget", ALICE, 403),
        ("POST", "/api/ns/beta/agent/import", ALICE, 403),
        ("DELETE", "/api/agent/memories/secret", {**ALICE, "X-Flowbaby-Namespace": "beta"}, 403),
        ("DELETE", "/api/ns/alpha/agent/memories/secret", ALICE, 200),
    ],
)
def test_forget_and_import_obey_the_token_scope(method: str, path: str, headers: dict[str, str], status: int) -> None:
    async def call() -> httpx.Response:
        async with _client() as client:
            return await client.request(method, path, headers=headers)

    response = asyncio.run(call())
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["errorCode"] == "NAMESPACE_FORBIDDEN"
    else:
        assert response.json()[1] == "svc:alpha"
