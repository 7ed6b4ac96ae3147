"""Sign-in for the memory browser (INGEST_CONTRACT.md 11.8): one-time codes, the sessions they
open, and the checks a cookie-carried request must pass.

A person never pastes the bearer token into a page: `flowbaby ui` asks the server (with the
token) for a one-time code and opens `/ui/signin?code=...`, which trades it for an HttpOnly,
SameSite=Strict session cookie. SameSite does not tell ports apart (every loopback server is
the same "site"), so a request carried by the cookie must also send `X-Flowbaby-Browser: 1`
(a page of another origin cannot add it without a CORS preflight, which this server never
grants) and, when it names an Origin, name this server's own. Codes and sessions live in this
process's memory only: a restart signs everyone out.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

CODE_TTL_SEC = 120.0
"""A one-time code not used by then is void."""
SESSION_TTL_SEC = 12 * 3600.0
"""A browser session lasts this long after sign-in (signing in again starts a new one)."""
MAX_LIVE = 1000
"""Codes (and, separately, sessions) kept at once; past it the oldest are dropped."""
CSRF_HEADER = b"x-flowbaby-browser"
COOKIE_PREFIX = "flowbaby_session_"


def cookie_name(port: int | None) -> str:
    """Per port: cookies ignore ports, and two servers on one machine must not sign each other out."""
    return f"{COOKIE_PREFIX}{port or 0}"


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Grant:
    """Who a code or a session stands for: the `caller` the bearer token authenticated as."""

    caller: Any
    expires: float


class BrowserSessions:
    """One-time codes and sessions, keyed by the sha256 of their secret (never the secret itself)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._codes: dict[str, Grant] = {}
        self._sessions: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def _put(self, table: dict[str, Grant], caller: Any, ttl: float) -> str:
        secret = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            for key in [k for k, g in table.items() if g.expires <= now]:
                del table[key]
            while len(table) >= MAX_LIVE:
                del table[next(iter(table))]
            table[_key(secret)] = Grant(caller, now + ttl)
        return secret

    def mint_code(self, caller: Any) -> str:
        return self._put(self._codes, caller, CODE_TTL_SEC)

    def redeem(self, code: str) -> str | None:
        """A new session's id for a live code (which is used up), or None."""
        with self._lock:
            grant = self._codes.pop(_key(code), None)
        if grant is None or grant.expires <= self._clock():
            return None
        return self.open(grant.caller)

    def open(self, caller: Any) -> str:
        return self._put(self._sessions, caller, SESSION_TTL_SEC)

    def caller(self, session: str) -> Any | None:
        with self._lock:
            grant = self._sessions.get(_key(session))
        return grant.caller if grant is not None and grant.expires > self._clock() else None

    def close(self, session: str) -> None:
        with self._lock:
            self._sessions.pop(_key(session), None)


def cookie_value(headers: list[tuple[bytes, bytes]] | Any, name: str) -> str | None:
    """The value of cookie `name` in a request's Cookie headers."""
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            left, sep, right = part.strip().partition("=")
            if sep and left == name:
                return right.strip() or None
    return None


def same_origin_problem(headers: list[tuple[bytes, bytes]] | Any, scheme: str) -> str | None:
    """Why a cookie-carried request is refused (cross-site request forgery), or None."""
    found = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in headers}
    if found.get(CSRF_HEADER.decode()) != "1":
        return f"a request signed in by the browser cookie must send the header {CSRF_HEADER.decode()}: 1"
    origin = found.get("origin")
    if origin is not None and origin != "null":
        parts = urlsplit(origin)
        host = found.get("host", "")
        if parts.scheme != scheme or parts.netloc.lower() != host.lower():
            return f"Origin {origin[:100]!r} is not this server's own"
    site = found.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a {site} request may not use the browser session"
    return None
