"""What a team namespace may be called: the name of its schema (`flowbaby_<namespace>`) and of a
folder, checked wherever one comes in (the environment, `flowbaby migrate`, a token's scope)."""

from __future__ import annotations

import re

_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
RESERVED_NAMESPACES = frozenset({"admin"})
"""Names no namespace may take: schema `flowbaby_admin` holds the server's tokens."""


def namespace_problem(name: str) -> str | None:
    """Why `name` cannot be a namespace, or None."""
    if not _NAMESPACE.match(name):
        return "must be 1-48 characters of a-z, 0-9, _ and -, starting with a letter or digit"
    if name in RESERVED_NAMESPACES:
        return f'"{name}" is reserved'
    return None
