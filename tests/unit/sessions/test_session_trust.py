"""Session settings and titles: an untrusted workspace `.env` cannot choose which agent history is
indexed (FLOWBABY_SESSIONS_*_DIR are guarded like the LLM settings), and a session's title, the
first user line, is redacted whatever source or stored record it comes from."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.core.redaction import MARK
from graph.sessions.config import load_session_settings
from graph.sessions.model import SessionInfo
from graph.sessions.sources.claude_code import ClaudeCodeSource
from tests.support.session_fixtures import Transcript

KEY = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for key in list(os.environ):
        if key.startswith("FLOWBABY_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    yield monkeypatch


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = f"FLOWBABY_SESSIONS_OPENCODE_DIR={repo}/oc\nFLOWBABY_SESSIONS_CLAUDE_DIR={repo}/cc\n"
    (repo / ".env").write_text(env + "FLOWBABY_SESSIONS_REASONING=1\n")
    return repo


def test_an_untrusted_env_keeps_the_default_session_folders(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    settings = load_session_settings(repo)
    assert settings.opencode_dir == tmp_path / "home" / ".local" / "share" / "opencode"
    assert settings.claude_dir == tmp_path / "home" / ".claude"
    assert settings.reasoning  # the other session settings are the workspace's to choose


def test_a_trusted_env_or_the_environment_chooses_them(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    clean_env.setenv("FLOWBABY_TRUSTED_WORKSPACES", str(repo))
    settings = load_session_settings(repo)
    assert (settings.opencode_dir, settings.claude_dir) == (repo / "oc", repo / "cc")
    clean_env.delenv("FLOWBABY_TRUSTED_WORKSPACES")
    clean_env.setenv("FLOWBABY_SESSIONS_CLAUDE_DIR", str(tmp_path / "mine"))
    assert load_session_settings(repo).claude_dir == tmp_path / "mine"


def test_titles_are_redacted(tmp_path: Path) -> None:
    info = SessionInfo("opencode", "ses_1", f"use DB_PASSWORD={KEY} please", str(tmp_path), 0, 0)
    assert info.title == f"use DB_PASSWORD={MARK} please"
    # The first user line is cut to 80 characters: a secret across the cut still goes, whole.
    transcript = Transcript(tmp_path / "claude", tmp_path / "ws")
    transcript.user("x" * 40 + f" AWS_SECRET_ACCESS_KEY={KEY} and more words after it")
    (listed,) = ClaudeCodeSource(tmp_path / "claude").sessions(str(tmp_path / "ws"))
    assert KEY[:4] not in listed.title and MARK in listed.title and len(listed.title) <= 80
