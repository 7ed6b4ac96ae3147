"""Session-memory settings, from the workspace .env and FLOWBABY_SESSIONS_* in the environment
(the environment wins, as for every other setting). The session folders are guarded keys
(graph.core.trust): an untrusted workspace's .env cannot choose which history is indexed."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from graph.core.environment import Environment
from graph.core.trust import workspace_env
from graph.core.workspace import WorkspacePaths
from graph.sessions.sources import claude_code, opencode
from graph.sessions.sources.codex import default_folder as codex_folder
from graph.sessions.sources.gemini import default_folder as gemini_folder


class SessionSettings(BaseModel):
    opencode: bool = True
    opencode_dir: Path
    claude_code: bool = True
    claude_dir: Path
    codex: bool = True
    codex_dir: Path = Field(default_factory=codex_folder)
    gemini: bool = True
    gemini_dir: Path = Field(default_factory=gemini_folder)
    reasoning: bool = False
    """Index reasoning (thinking) text too; off by default."""
    watch: bool = True
    """Keep the workspace's sessions fresh while serve or a bridge owns it."""
    watch_interval_sec: float = 2.0
    auto_import: bool = True
    """The watcher also imports the workspace's sessions that were never imported."""


def load_session_settings(workspace: Path) -> SessionSettings:
    env, _ = workspace_env(WorkspacePaths(workspace))
    values = {k: v for k, v in env.items() if v is not None}
    values.update({k: v for k, v in Environment.read().settings().items() if k.startswith("FLOWBABY_SESSIONS_")})

    def flag(name: str, default: bool) -> bool:
        raw = values.get(name, "").strip().lower()
        return default if not raw else raw not in {"0", "false", "no", "off"}

    def folder(name: str, default: Path) -> Path:
        raw = values.get(name, "").strip()
        return Path(raw).expanduser() if raw else default

    return SessionSettings(
        opencode=flag("FLOWBABY_SESSIONS_OPENCODE", True),
        opencode_dir=folder("FLOWBABY_SESSIONS_OPENCODE_DIR", opencode.default_folder()),
        claude_code=flag("FLOWBABY_SESSIONS_CLAUDE_CODE", True),
        claude_dir=folder("FLOWBABY_SESSIONS_CLAUDE_DIR", claude_code.default_folder()),
        codex=flag("FLOWBABY_SESSIONS_CODEX", True),
        codex_dir=folder("FLOWBABY_SESSIONS_CODEX_DIR", codex_folder()),
        gemini=flag("FLOWBABY_SESSIONS_GEMINI", True),
        gemini_dir=folder("FLOWBABY_SESSIONS_GEMINI_DIR", gemini_folder()),
        reasoning=flag("FLOWBABY_SESSIONS_REASONING", False),
        watch=flag("FLOWBABY_SESSIONS_WATCH", True),
        watch_interval_sec=_seconds(values.get("FLOWBABY_SESSIONS_WATCH_SEC", "")),
        auto_import=flag("FLOWBABY_SESSIONS_AUTO_IMPORT", True),
    )


def _seconds(raw: str) -> float:
    """The watch interval: 2 s unless a number of at least 0.2 is given (a typo never stops a start)."""
    try:
        return max(0.2, float(raw)) if raw.strip() else 2.0
    except ValueError:
        return 2.0
