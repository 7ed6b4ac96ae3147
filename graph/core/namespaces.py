"""What a namespace (one workspace on the team backend, schema `flowbaby_<namespace>`) may be called:
checked where a namespace is chosen (graph.backends.backend) and where a token is scoped to one
(graph.core.api_tokens), so it lives below both."""

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
