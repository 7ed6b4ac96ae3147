"""The API's bearer token: configured, or generated once and kept in .flowbaby/api_token (0600)."""

from __future__ import annotations

import os
import secrets

from dotenv import dotenv_values

from graph.service import WorkspacePaths

TOKEN_FILE = "api_token"


def resolve_token(paths: WorkspacePaths) -> tuple[str, str]:
    """(token, where it came from). An empty configured token is kept empty: it rejects
    every request, which is how an operator switches the API off without stopping it."""
    configured = os.environ.get("FLOWBABY_API_TOKEN")
    if configured is None and paths.env_file.is_file():
        configured = dotenv_values(paths.env_file).get("FLOWBABY_API_TOKEN")
    if configured is not None:
        return configured.strip(), "FLOWBABY_API_TOKEN"
    path = paths.data / TOKEN_FILE
    if path.is_file():
        return path.read_text(encoding="utf-8").strip(), str(path)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, str(path)


def token_matches(expected: str, header: str | None) -> bool:
    """Constant-time check of an `Authorization: Bearer <token>` header."""
    if not expected or not header or not header.startswith("Bearer "):
        return False
    return secrets.compare_digest(expected.encode(), header.removeprefix("Bearer ").strip().encode())
