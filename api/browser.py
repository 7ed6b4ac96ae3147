"""The memory browser: its page and assets (api/ui/, plain files, no build step) and its sign-in
routes (INGEST_CONTRACT.md 11.2). The page calls the same /api routes as every other client,
with a browser session instead of the bearer token (api/browser_auth.py, api/tenancy.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

import graph.core.jsonwire as jsonwire
from api.browser_auth import CSRF_HEADER, SESSION_TTL_SEC, cookie_name, same_origin_problem
from api.tenancy import CurrentService, Tenancy, bearer, session_caller
from graph.core.contract import (
    ErrorCode,
    FlowbabyError,
    GetMemoryRequest,
    GetMemoryResponse,
    MemoryContextResponse,
    validate_request,
)

UI = Path(__file__).with_name("ui")
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
ASSETS: dict[str, tuple[bytes, str]] = {
    path.name: (path.read_bytes(), TYPES[path.suffix]) for path in sorted(UI.iterdir()) if path.suffix in TYPES
}
"""Every asset, read once at import: the page never reads the disk per request."""
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; "
)
CSP = POLICY + "frame-ancestors 'none'"
"""Nothing but this server's own files and routes, and no frame: no other page (another loopback
port's included) can put this one under its own to trick a click."""
EMBEDDED_CSP = POLICY + "frame-ancestors 'self' vscode-webview: vscode-file://vscode-app"
"""The page the VS Code extension frames (`/?embedded=1`): VS Code's webview and workbench (desktop)
and 'self', which is code-server when it frames the page through its own /proxy/<port>/ (the
page's origin is then code-server's). Never another loopback port."""
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _refusal(status: int, message: str, code: ErrorCode = ErrorCode.UNAUTHORIZED) -> JSONResponse:
    return JSONResponse(FlowbabyError(code, message).to_response(), status_code=status, headers=PAGE_HEADERS)


def _asset(name: str, policy: str = CSP) -> Response:
    found = ASSETS.get(name)
    if found is None:
        return _refusal(404, f'No page asset "{name[:100]}"', ErrorCode.NOT_FOUND)
    body, media = found
    return Response(body, media_type=media, headers={**PAGE_HEADERS, "Content-Security-Policy": policy})


def _with_cookie(response: Response, request: Request, session: str) -> Response:
    response.set_cookie(
        cookie_name(request.scope.get("server", (None, None))[1]),
        session,
        max_age=int(SESSION_TTL_SEC),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def browser_routes(app: FastAPI, tenancy: Tenancy) -> None:
    """`/` and `/ui/*`: public (they hold no memory); the sign-in routes check what they are given."""

    @app.get("/", include_in_schema=False)
    async def page(embedded: str = "") -> Response:
        return _asset("index.html", EMBEDDED_CSP if embedded == "1" else CSP)

    @app.get("/ui/assets/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        return _asset(name)

    service = CurrentService(tenancy.services.default)

    @app.get("/api/agent/memory", response_model=GetMemoryResponse)
    async def memory(topicId: str, scope: str | None = None) -> GetMemoryResponse:
        """getMemory with the topicId as a query parameter: a path segment cannot carry every
        topicId (`/` splits it, a browser resolves `..` away); ?scope=user: the user store's."""
        request: GetMemoryRequest = validate_request(GetMemoryRequest, {"topicId": topicId, "scope": scope})
        reply: GetMemoryResponse = await service.get_memory(request)
        return reply

    @app.get("/api/agent/memory/context", response_model=MemoryContextResponse)
    async def memory_context(
        topicId: str, q: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        """`/api/agent/memories/{topicId}/context` with the topicId as a query parameter."""
        context: MemoryContextResponse = await service.memory_context(topicId, q, hops, version)
        return context

    @app.post("/api/ui/codes", status_code=201)
    async def mint_code(request: Request) -> dict[str, Any]:
        """A one-time sign-in code for the bearer of this request's token (`flowbaby ui`)."""
        caller = await tenancy.auth.authenticate(request.headers.get("authorization"))
        if caller is None:  # a browser session may not mint codes: only the token's holder
            raise FlowbabyError(ErrorCode.UNAUTHORIZED, "A sign-in code needs the bearer token")
        code = tenancy.browser.mint_code(caller)
        return {"success": True, "code": code, "path": f"/ui/signin?code={code}", "expiresInSec": 120}

    @app.get("/ui/signin", include_in_schema=False)
    async def signin_link(code: str = "") -> Response:
        """The one-time link: to the page, which redeems the code by POST (a GET uses nothing up,
        so a link preview cannot spend it, and the page receives the session's key)."""
        target = f"../#/signin?code={quote(code[:100], safe='')}" if code else "../#/signin"
        return RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)

    @app.post("/ui/signin", include_in_schema=False)
    async def signin(request: Request) -> Response:
        """{"code"} (a one-time code) or {"token"} (a user's own token, team servers). The reply
        holds the session's key (the page sends it with the cookie); with {"embedded": true} the
        session id too (the VS Code webview sends both as headers: a framed page's SameSite=Strict
        cookie is never sent)."""
        problem = same_origin_problem(request.headers.raw, request.url.scheme)
        if problem:
            return _refusal(403, f"Cross-site request refused: {problem}")
        try:
            body = jsonwire.loads(await request.body() or b"{}")
        except jsonwire.JSONInputError as exc:
            return _refusal(400, f"Body is not valid JSON: {exc}", ErrorCode.INVALID_PAYLOAD)
        if not isinstance(body, dict) or not isinstance(body.get("code", body.get("token")), str):
            return _refusal(400, 'Send {"code": "..."} or {"token": "..."}', ErrorCode.INVALID_PAYLOAD)
        if "code" in body:
            caller = tenancy.browser.redeem(body["code"])
            caller = None if caller is None else await tenancy.auth.recheck(caller)
        else:
            caller = await tenancy.auth.authenticate(f"Bearer {body['token']}")
        if caller is None:
            return _refusal(401, "The code is used up or expired, or the token is wrong")
        session, key = tenancy.browser.open(caller)
        reply: dict[str, Any] = {"success": True, **_who(tenancy, caller), "sessionKey": key}
        if body.get("embedded") is True:
            reply["session"] = session
        return _with_cookie(JSONResponse(reply, headers=PAGE_HEADERS), request, session)

    @app.get("/ui/session", include_in_schema=False)
    async def whoami(request: Request) -> Response:
        """Whether this browser is signed in (session and its key, or the bearer token), as whom,
        and which namespaces it may use."""
        _, caller = await session_caller(tenancy, request.scope)
        if caller is None and bearer(request.headers.get("authorization")):
            caller = await tenancy.auth.authenticate(request.headers.get("authorization"))
        return JSONResponse({"signedIn": caller is not None, **_who(tenancy, caller)}, headers=PAGE_HEADERS)

    @app.post("/ui/signout", include_in_schema=False)
    async def signout(request: Request) -> Response:
        problem = same_origin_problem(request.headers.raw, request.url.scheme)
        if problem:
            return _refusal(403, f"Cross-site request refused: {problem}")
        session, caller = await session_caller(tenancy, request.scope)
        if session and caller is not None:  # the cookie alone (another listener may hold it) ends nothing
            tenancy.browser.close(session)
        response = JSONResponse({"success": True, "signedIn": False}, headers=PAGE_HEADERS)
        response.delete_cookie(cookie_name(request.scope.get("server", (None, None))[1]), path="/")
        return response


def _who(tenancy: Tenancy, caller: Any) -> dict[str, Any]:
    namespaces = None if caller is None or caller.namespaces is None else sorted(caller.namespaces)
    return {
        "user": None if caller is None else caller.user,
        "namespaces": namespaces,
        "namespace": tenancy.services.namespace,
        "csrfHeader": CSRF_HEADER.decode(),
    }
