"""Which settings a workspace may choose for itself.

A cloned repository's `.env` is written by whoever wrote the repository. The settings that
decide where memories and keys go (the LLM provider, model, key, endpoint, API version), what
code runs (the embedding model folder, which may hold a pickle), who may read memories (the
API token) and which agent histories are indexed (the session folders: a repository could point
them at a fake history of its own, injecting text into session search) are taken from a
workspace `.env` only when the user put that workspace on their allow-list. The LLM settings
come as one unit from one source, never merged key by key: a repository that commits
`LLM_ENDPOINT` alone never receives the user's `LLM_API_KEY`.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Literal

from dotenv import dotenv_values

from graph.core.environment import Environment
from graph.core.workspace import WorkspacePaths

log = logging.getLogger("flowbaby.settings")

LLM_KEYS = ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY", "LLM_ENDPOINT", "LLM_API_VERSION")
SESSION_FOLDER_KEYS = (
    "FLOWBABY_SESSIONS_OPENCODE_DIR",
    "FLOWBABY_SESSIONS_CLAUDE_DIR",
    "FLOWBABY_SESSIONS_CODEX_DIR",
    "FLOWBABY_SESSIONS_GEMINI_DIR",
)
GUARDED_KEYS = frozenset(
    {
        *LLM_KEYS,
        *SESSION_FOLDER_KEYS,
        "FLOWBABY_EMBEDDING_MODEL",
        "FLOWBABY_API_TOKEN",
        "FLOWBABY_REDACT",
        "FLOWBABY_AGENT_FORGET",
    }
)
"""Keys an untrusted workspace .env may not set."""
ALLOW_LIST_ENV = "FLOWBABY_TRUSTED_WORKSPACES"
"""os.pathsep-separated workspace folders the user trusts (read from the process environment only)."""

LLMSource = Literal["environment", "workspace", "default", "untrusted-workspace-ignored"]


def allow_list_file() -> Path:
    """The user-level allow-list: one workspace folder per line, `#` starts a comment."""
    return Environment.read().config_home / "flowbaby" / "trusted_workspaces"


def _allow_list_lines() -> list[str]:
    path = allow_list_file()
    try:
        info = path.stat()
        # Anyone who can write the list could trust a workspace for the user.
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            log.warning("ignoring %s: it must be owned by this user and writable by no one else", path)
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # no list (or an unreadable one) trusts nothing
    return [line.split("#", 1)[0].strip() for line in text.splitlines()]


def workspace_trusted(root: Path) -> bool:
    entries = [*Environment.read().get(ALLOW_LIST_ENV).split(os.pathsep), *_allow_list_lines()]
    allowed = {Path(entry).expanduser().resolve() for entry in entries if entry.strip()}
    return root.resolve() in allowed


def workspace_env(paths: WorkspacePaths) -> tuple[dict[str, str | None], bool]:
    """The workspace .env's values with the guarded keys left out unless the workspace is
    trusted, and whether it is."""
    if not paths.env_file.is_file():
        return {}, False
    values = dotenv_values(paths.env_file)
    trusted = workspace_trusted(paths.root)
    ignored = sorted(key for key, value in values.items() if key in GUARDED_KEYS and value and not trusted)
    if ignored:
        log.warning(
            "ignoring %s from %s: the workspace is not trusted (add %s to %s to allow it)",
            ", ".join(ignored),
            paths.env_file,
            paths.root.resolve(),
            allow_list_file(),
        )
        values = {key: value for key, value in values.items() if key not in GUARDED_KEYS}
    return values, trusted


def settings_values(
    paths: WorkspacePaths, process: Environment | None = None
) -> tuple[dict[str, str | None], LLMSource]:
    """Every FLOWBABY_/LLM_ setting by name, and where the LLM settings came from: the process
    environment (`process`, default: read now) if it sets any LLM_ key, else a trusted workspace
    .env, else none (offline)."""
    values, trusted = workspace_env(paths)
    environment = (process or Environment.read()).settings()
    from_environment = {key: environment[key] for key in LLM_KEYS if environment.get(key)}
    from_workspace = {key: values[key] for key in LLM_KEYS if values.get(key)}
    source: LLMSource = "default"
    if from_environment:
        source = "environment"
    elif from_workspace:
        source = "workspace"
    elif not trusted and paths.env_file.is_file() and any(dotenv_values(paths.env_file).get(k) for k in LLM_KEYS):
        source = "untrusted-workspace-ignored"
    merged = {key: value for key, value in values.items() if key not in LLM_KEYS}
    merged.update({key: value for key, value in environment.items() if key not in LLM_KEYS})
    merged.update(from_environment if source == "environment" else from_workspace)
    return merged, source


def configured_token(paths: WorkspacePaths) -> tuple[str | None, str]:
    """FLOWBABY_API_TOKEN from the environment, else from a trusted workspace .env; None if neither."""
    configured = Environment.read().values.get("FLOWBABY_API_TOKEN")
    if configured is not None:
        return configured, "FLOWBABY_API_TOKEN (environment)"
    values, _ = workspace_env(paths)
    token = values.get("FLOWBABY_API_TOKEN")
    return token, "FLOWBABY_API_TOKEN (trusted workspace .env)"
