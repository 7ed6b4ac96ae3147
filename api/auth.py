"""The API's bearer token: configured, or generated once and kept in .flowbaby/api_token (0600).

A token a cloned repository could have chosen is never used: FLOWBABY_API_TOKEN counts from the
process environment or a trusted workspace's .env only, and a token file is refused unless flowbaby
generated it in this folder (its seal, graph.core.seal: a committed one has none, whatever mode git
gave it) and it is this user's, mode 0600, not a symlink, so whoever wrote the repository cannot
know the token.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from graph.api import API_TOKEN_PURPOSE, WorkspacePaths, configured_token, read_sealed_file, write_seal


def resolve_token(paths: WorkspacePaths) -> tuple[str, str]:
    """(token, where it came from). An empty configured token is kept empty: it rejects
    every request, which is how an operator switches the API off without stopping it."""
    configured, source = configured_token(paths)
    if configured is not None:
        return configured.strip(), source
    path = paths.api_token
    if os.path.lexists(path):
        return read_token_file(path, paths.root), str(path)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    write_seal(path, API_TOKEN_PURPOSE, paths.root, (token + "\n").encode())
    return token, str(path)


def read_token_file(path: Path, root: Path) -> str:
    """The token in `path`, which flowbaby generated for the workspace `root` (sealed, 0600, this user's)."""
    remedy = "delete it and a new one is generated"
    return read_sealed_file(path, API_TOKEN_PURPOSE, root, "API token file", remedy).strip()


def token_matches(expected: str, header: str | None) -> bool:
    """Constant-time check of an `Authorization: Bearer <token>` header."""
    if not expected or not header or not header.startswith("Bearer "):
        return False
    return secrets.compare_digest(expected.encode(), header.removeprefix("Bearer ").strip().encode())
