"""Per-user API tokens of a team server: their format, hash and namespace scope.

A token is `fbt_<id>_<secret>`: `id` (12 hex digits) names its row, `secret` is 32 random bytes
(`secrets.token_urlsafe(32)`). Only sha256 of the whole token is stored. A slow KDF (scrypt,
argon2) protects guessable passwords; a 256-bit random secret cannot be guessed from its hash,
and a slow hash would cost every request its CPU. The row is found by id and the hash compared
with `secrets.compare_digest`, so the check stays constant-time in the secret.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from graph.core.namespaces import namespace_problem

PREFIX = "fbt_"
ID_HEX = 12
ANY_NAMESPACE = "*"
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
CACHE_SEC = 5.0
"""A token's answer (valid, scope, revoked) is kept this long: a revocation takes effect within it."""
CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class Grant:
    """Who a token speaks for and where: `namespaces` None means any namespace (`*`)."""

    user: str | None
    namespaces: frozenset[str] | None

    def allows(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


@dataclass(frozen=True)
class TokenRecord:
    token_id: str
    user: str
    namespaces: tuple[str, ...]
    created_at: str
    revoked_at: str | None
    token_hash: bytes = b""

    def grant(self) -> Grant:
        scope = None if ANY_NAMESPACE in self.namespaces else frozenset(self.namespaces)
        return Grant(self.user, scope)


class TokenStore(Protocol):
    """Where tokens live (graph.backends.team.admin: schema flowbaby_admin)."""

    def create(self, user: str, namespaces: Sequence[str], token_id: str, token_hash: bytes) -> TokenRecord: ...
    def find(self, token_id: str) -> TokenRecord | None: ...
    def records(self) -> list[TokenRecord]: ...
    def revoke(self, *, token_id: str | None = None, user: str | None = None) -> list[str]: ...
    def close(self) -> None: ...


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def new_token() -> tuple[str, str]:
    """(id, token): the token is shown once and never stored."""
    token_id = secrets.token_hex(ID_HEX // 2)
    return token_id, f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"


def token_id_of(token: str) -> str | None:
    """The id inside a well-formed token, else None (then it is no per-user token)."""
    if not token.startswith(PREFIX) or len(token) < len(PREFIX) + ID_HEX + 2:
        return None
    token_id = token[len(PREFIX) : len(PREFIX) + ID_HEX]
    if token[len(PREFIX) + ID_HEX] != "_" or not re.fullmatch(r"[0-9a-f]+", token_id):
        return None
    return token_id


def check_scope(user: str, namespaces: Sequence[str]) -> tuple[str, ...]:
    """The scope a new token gets, or ValueError naming the first bad part."""
    if not _USER.match(user):
        raise ValueError("a user name is 1-64 of A-Z a-z 0-9 . _ @ + -, starting with a letter or digit")
    if not namespaces:
        raise ValueError("name at least one namespace (or * for every namespace)")
    for name in namespaces:
        problem = None if name == ANY_NAMESPACE else namespace_problem(name)
        if problem:
            raise ValueError(f'namespace "{name}" {problem}')
    return tuple(sorted(set(namespaces)))


def issue(store: TokenStore, user: str, namespaces: Sequence[str]) -> tuple[TokenRecord, str]:
    """A new token for `user` on `namespaces`: its record and the token itself (shown once)."""
    scope = check_scope(user, namespaces)
    token_id, token = new_token()
    return store.create(user, scope, token_id, digest(token)), token


def verify(store: TokenStore, token: str) -> Grant | None:
    """The grant of a live per-user token, else None (unknown, wrong secret or revoked)."""
    token_id = token_id_of(token)
    if token_id is None:
        return None
    record = store.find(token_id)
    if record is None:
        return None
    if not secrets.compare_digest(digest(token), record.token_hash) or record.revoked_at is not None:
        return None
    return record.grant()


class GrantCache:
    """Answers of `verify` for CACHE_SEC, keyed by the token's digest (never the token), at most
    CACHE_ENTRIES (oldest dropped), so each request does not cost a database round trip."""

    def __init__(self, ttl_sec: float = CACHE_SEC, entries: int = CACHE_ENTRIES) -> None:
        self.ttl_sec = ttl_sec
        self.entries = entries
        self._items: OrderedDict[bytes, tuple[float, Grant | None]] = OrderedDict()

    def get(self, key: bytes) -> tuple[bool, Grant | None]:
        """(found, grant)."""
        item = self._items.get(key)
        if item is None or time.monotonic() - item[0] >= self.ttl_sec:
            return False, None
        return True, item[1]

    def put(self, key: bytes, grant: Grant | None) -> None:
        self._items[key] = (time.monotonic(), grant)
        self._items.move_to_end(key)
        while len(self._items) > self.entries:
            self._items.popitem(last=False)
