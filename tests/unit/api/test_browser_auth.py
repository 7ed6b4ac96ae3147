"""The memory browser's sign-in (INGEST_CONTRACT.md 11.2) through the real ASGI app in process: the
one-time code, the session cookie, the cross-site checks, the token form and the page's assets; and
the audit tail the Activity view reads."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import create_app
from api.browser import ASSETS
from api.browser_auth import CODE_TTL_SEC, MAX_PER_USER, BrowserSessions
from graph.backends.embedded.audit_log import AuditLog, read_tail
from graph.core.contract import ConfirmSupersessionRequest

TOKEN = "workspace-token"
BASE = "http://127.0.0.1:8766"
PAGE = {"X-Flowbaby-Browser": "1", "Origin": BASE}


class _Service:
    """What the routes under test call."""

    def __init__(self) -> None:
        self.confirmed: list[Any] = []

    async def implied_supersessions(self) -> dict[str, Any]:
        return {"success": True, "pairs": [], "count": 0}

    async def confirm_supersession(self, request: ConfirmSupersessionRequest, *, writer: Any = None) -> dict[str, Any]:
        self.confirmed.append(request)
        return {"success": True, "topicId": "a", "memoryId": "m", "status": "Superseded", "supersededBy": "b"}


def _client(service: _Service) -> httpx.AsyncClient:
    app = create_app(service, TOKEN)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    return httpx.AsyncClient(transport=transport, base_url=BASE)


async def _signed_in(client: httpx.AsyncClient) -> dict[str, str]:
    """Signed in as the page is (the link leads to the page, which redeems the code by POST): the
    headers the page then sends (the cookie is in the client's jar)."""
    minted = await client.post("/api/ui/codes", headers={"Authorization": f"Bearer {TOKEN}"})
    assert minted.status_code == 201
    code = minted.json()["code"]
    link = await client.get(minted.json()["path"])
    assert link.status_code == 303 and link.headers["location"] == f"../#/signin?code={code}"
    assert "set-cookie" not in link.headers  # a GET spends nothing
    signed = await client.post("/ui/signin", json={"code": code}, headers=PAGE)
    assert signed.status_code == 200 and "session" not in signed.json()
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert client.cookies.get("flowbaby_session_8766")
    return {**PAGE, "X-Flowbaby-Session-Key": signed.json()["sessionKey"]}


def test_one_time_link_opens_a_cookie_session_and_is_then_void() -> None:
    async def scenario() -> None:
        service = _Service()
        async with _client(service) as client:
            assert (await client.get("/api/agent/supersessions")).status_code == 401
            page = await _signed_in(client)
            assert (await client.get("/api/agent/supersessions", headers=page)).status_code == 200
            who = (await client.get("/ui/session", headers=page)).json()
            assert who["signedIn"] is True and who["user"] is None
            # The cookie alone (another listener on this host receives it) opens nothing.
            assert (await client.get("/api/agent/supersessions", headers=PAGE)).status_code == 401
            assert (await client.get("/ui/session")).json()["signedIn"] is False
            wrong = {**page, "X-Flowbaby-Session-Key": "0" * 64}
            assert (await client.get("/api/agent/supersessions", headers=wrong)).status_code == 401
            # The code is single-use: reusing it signs nobody in.
            minted = await client.post("/api/ui/codes", headers={"Authorization": f"Bearer {TOKEN}"})
            code = minted.json()["code"]
            assert (await client.post("/ui/signin", json={"code": code}, headers=PAGE)).status_code == 200
            again = await client.post("/ui/signin", json={"code": code}, headers=PAGE)
            assert again.status_code == 401 and "set-cookie" not in again.headers
            # A browser session may not mint codes (only the token's holder).
            assert (await client.post("/api/ui/codes", headers=page)).status_code == 401

    asyncio.run(scenario())


def test_cookie_requests_without_the_header_or_from_another_origin_are_refused() -> None:
    async def scenario() -> None:
        service = _Service()
        async with _client(service) as client:
            page = await _signed_in(client)
            key = {"X-Flowbaby-Session-Key": page["X-Flowbaby-Session-Key"]}
            body = {"olderTopicId": "a", "newerTopicId": "b"}
            # A form post or fetch from another page (even another loopback port) carries the
            # cookie (SameSite ignores ports) but not the header, or not this origin.
            plain = await client.post("/api/agent/supersessions/confirm", json=body, headers=key)
            assert plain.status_code == 403 and "x-flowbaby-browser" in plain.json()["error"]
            other_port = {**key, "X-Flowbaby-Browser": "1", "Origin": "http://127.0.0.1:3000"}
            refused = await client.post("/api/agent/supersessions/confirm", json=body, headers=other_port)
            assert refused.status_code == 403 and "not this server's own" in refused.json()["error"]
            cross = {**key, "X-Flowbaby-Browser": "1", "Sec-Fetch-Site": "same-site"}
            assert (await client.post("/api/agent/supersessions/confirm", json=body, headers=cross)).status_code == 403
            assert service.confirmed == []
            ok = await client.post("/api/agent/supersessions/confirm", json=body, headers=page)
            assert ok.status_code == 200 and service.confirmed == [ConfirmSupersessionRequest.model_validate(body)]
            # The bearer token keeps working without any of it (agents).
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            assert (await client.post("/api/agent/supersessions/confirm", json=body, headers=bearer)).status_code == 200
            # Signing out with the cookie alone ends nothing; with the key, the session.
            cookie = {"Cookie": f"flowbaby_session_8766={client.cookies.get('flowbaby_session_8766')}"}
            assert (await client.post("/ui/signout", headers=PAGE)).status_code == 200
            assert (await client.get("/api/agent/supersessions", headers={**page, **cookie})).status_code == 200
            assert (await client.post("/ui/signout", headers={**page, **cookie})).status_code == 200
            assert (await client.get("/api/agent/supersessions", headers={**page, **cookie})).status_code == 401

    asyncio.run(scenario())


def test_token_form_and_embedded_session_header() -> None:
    async def scenario() -> None:
        async with _client(_Service()) as client:
            wrong = await client.post("/ui/signin", json={"token": "nope"}, headers=PAGE)
            assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
            no_header = await client.post("/ui/signin", json={"token": TOKEN}, headers={"Origin": BASE})
            assert no_header.status_code == 403
            signed = await client.post("/ui/signin", json={"token": TOKEN, "embedded": True}, headers=PAGE)
            assert signed.status_code == 200 and signed.json()["session"]
            session, key = signed.json()["session"], signed.json()["sessionKey"]
            client.cookies.clear()
            # Inside a VS Code webview the framed page sends its session and its key as headers.
            headers = {**PAGE, "X-Flowbaby-Session": session}
            assert (await client.get("/api/agent/supersessions", headers=headers)).status_code == 401
            headers["X-Flowbaby-Session-Key"] = key
            assert (await client.get("/api/agent/supersessions", headers=headers)).status_code == 200
            assert (
                await client.get("/api/agent/supersessions", headers={**headers, "X-Flowbaby-Browser": "0"})
            ).status_code == 403

    asyncio.run(scenario())


def test_codes_expire() -> None:
    now = [0.0]
    sessions = BrowserSessions(clock=lambda: now[0])
    code = sessions.mint_code("caller")
    now[0] = CODE_TTL_SEC + 1
    assert sessions.redeem(code) is None
    fresh = sessions.mint_code("caller")
    assert sessions.redeem(fresh) == "caller"
    assert sessions.redeem(fresh) is None
    session, key = sessions.open("caller")
    assert sessions.caller(session, key) == "caller" and sessions.caller(session, None) is None
    # The key is this server's: the same session id elsewhere has another.
    assert BrowserSessions().key(session) != key


def test_sessions_are_capped_per_user() -> None:
    @dataclass(frozen=True)
    class Who:
        user: str | None

    sessions = BrowserSessions()
    bob = sessions.open(Who("bob"))
    alice = [sessions.open(Who("alice")) for _ in range(MAX_PER_USER + 5)]
    assert sessions.caller(*bob) == Who("bob")
    assert [sessions.caller(*s) is not None for s in alice] == [False] * 5 + [True] * MAX_PER_USER


def test_page_and_assets_are_public_offline_and_under_a_strict_policy() -> None:
    async def scenario() -> None:
        async with _client(_Service()) as client:
            page = await client.get("/")
            assert page.status_code == 200 and "ui/assets/app.js" in page.text
            policy = page.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
            assert "frame-ancestors 'none'" in policy
            embedded = (await client.get("/?embedded=1")).headers["content-security-policy"]
            assert "frame-ancestors 'self' vscode-webview:" in embedded and "127.0.0.1" not in embedded
            for name in ASSETS:
                asset = await client.get(f"/ui/assets/{name}")
                assert asset.status_code == 200, name
                # Offline: no asset names another host (no CDN, font or script from outside).
                assert "http://" not in asset.text.replace("http://127.0.0.1", "") and "https://" not in asset.text
            assert (await client.get("/ui/assets/..%2Fbrowser.py")).status_code == 404

    asyncio.run(scenario())


def test_audit_tail_reads_newest_first_and_skips_cut_lines(tmp_path: Path) -> None:
    path = tmp_path / "agent_audit.log"
    log = AuditLog(path)
    for n in range(300):
        log.record(f"cmd{n}", agent_name="a", topic=f"t{n}", result="success", error_code=None, duration_ms=1.0)
    with path.open("a") as handle:
        handle.write('{"timestamp": "cut')
    tail = read_tail(path, 5)
    assert [e["command"] for e in tail] == ["cmd299", "cmd298", "cmd297", "cmd296", "cmd295"]
    assert all("t29" not in json.dumps(e) for e in tail)  # the topic only as its digest
    assert len(read_tail(path, 1000)) == 300 and read_tail(tmp_path / "none", 5) == []


def test_audit_tail_reply_tolerates_lines_of_other_versions() -> None:
    from graph.engine.inspection import audit_shown

    line: dict[str, Any] = {"timestamp": "t", "command": "storeMemory", "agentName": None, "topicDigest": "ab12cd34"}
    line |= {"result": "success", "errorCode": None, "durationMs": 1.5}
    shown = audit_shown({**line, "redacted": 2, "addedLater": 1})  # a field of a later version
    assert shown is not None and shown["command"] == "storeMemory" and "addedLater" not in shown
    assert shown["redacted"] == 2
    assert audit_shown({k: v for k, v in line.items() if k != "durationMs"}) is None  # one it needs


@pytest.mark.parametrize("limit", [0, 1001])
def test_audit_tail_limit_is_checked(limit: int) -> None:
    from graph.core.contract import AuditTailRequest, FlowbabyError, validate_request

    with pytest.raises(FlowbabyError):
        validate_request(AuditTailRequest, {"limit": limit})
