"""Sign-in for the memory browser (INGEST_CONTRACT.md 11.2): one-time codes, the sessions they
open, and the checks a session-carried request must pass.

A person never pastes the bearer token into a page: `flowbaby ui` asks the server (with the
token) for a one-time code and hands the browser a link to it through a file only the user can
read; the page trades the code (POST /ui/signin) for an HttpOnly, SameSite=Strict session cookie
and a session key. Cookies ignore ports, so every other listener on 127.0.0.1 (another user's
too) may receive the cookie: a request counts as signed in only with the key as well, which the
page keeps in its own origin's storage and sends in `X-Flowbaby-Session-Key`. The key is an HMAC
of the session under this server process's own random secret, so a session and key pair is good
at this server only. A session-carried request must also send `X-Flowbaby-Browser: 1` and, when
it names an Origin, name this server's own. Codes and sessions live in this process's memory
only (a restart signs everyone out), at most MAX_PER_USER of each per user.
"""

from __future__ import annotations

import hashlib
import hmac
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
MAX_PER_USER = 50
"""Live codes (and, separately, sessions) of one user; past it that user's oldest is dropped, so
one user signing in again and again signs no one else out."""
CSRF_HEADER = b"x-flowbaby-browser"
KEY_HEADER = b"x-flowbaby-session-key"
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

    @property
    def owner(self) -> str | None:
        """The user it counts against (None: the workspace's own token)."""
        return getattr(self.caller, "user", None)


class BrowserSessions:
    """One-time codes and sessions, keyed by the sha256 of their secret (never the secret itself)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._secret = secrets.token_bytes(32)
        self._codes: dict[str, Grant] = {}
        self._sessions: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def _put(self, table: dict[str, Grant], caller: Any, ttl: float) -> str:
        secret = secrets.token_urlsafe(32)
        now = self._clock()
        grant = Grant(caller, now + ttl)
        with self._lock:
            for key in [k for k, g in table.items() if g.expires <= now]:
                del table[key]
            mine = [k for k, g in table.items() if g.owner == grant.owner]  # oldest first
            for key in mine[: max(0, len(mine) - MAX_PER_USER + 1)]:
                del table[key]
            table[_key(secret)] = grant
        return secret

    def mint_code(self, caller: Any) -> str:
        return self._put(self._codes, caller, CODE_TTL_SEC)

    def redeem(self, code: str) -> Any | None:
        """The caller a live code stands for (the code is used up), or None."""
        with self._lock:
            grant = self._codes.pop(_key(code), None)
        return grant.caller if grant is not None and grant.expires > self._clock() else None

    def open(self, caller: Any) -> tuple[str, str]:
        """A new session for `caller`: (session id, its key)."""
        session = self._put(self._sessions, caller, SESSION_TTL_SEC)
        return session, self.key(session)

    def key(self, session: str) -> str:
        """The session's key: what the page must send besides the cookie (bound to this server)."""
        return hmac.new(self._secret, session.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def caller(self, session: str, key: str | None) -> Any | None:
        """Who a live session stands for, if `key` is its key; else None."""
        if not key or not hmac.compare_digest(key.encode("latin-1", "replace"), self.key(session).encode()):
            return None
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
    """Why a session-carried request is refused (cross-site request forgery), or None."""
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
