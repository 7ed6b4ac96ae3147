"""Workspaces and bridges that build no graph, for the tests that read only the memory store: without a
cognee worker (~7 CPU-s a start, ~5 of them `import cognee`)."""

from __future__ import annotations

import os
from pathlib import Path


def store_only_workspace(folder: Path) -> Path:
    """Make `folder` a workspace with FLOWBABY_BUILD_GRAPH=0 in its .env: memories are staged, embedded
    and reconciled without a cognify; shared by the reconcile and correction tests that start a bridge."""
    folder.mkdir()
    (folder / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    return folder


def store_only_env() -> dict[str, str]:
    """This process's environment as it is now (the session's user store is set after the test modules are
    imported) with FLOWBABY_BUILD_GRAPH=0, for a bridge whose test reads no graph."""
    return {**os.environ, "FLOWBABY_BUILD_GRAPH": "0"}
