"""A workspace whose bridge builds no graph, for the bridge tests that need only the memory store."""

from __future__ import annotations

from pathlib import Path


def store_only_workspace(folder: Path) -> Path:
    """Make `folder` a workspace with FLOWBABY_BUILD_GRAPH=0 in its .env: memories are staged, embedded
    and reconciled without a cognify; shared by the reconcile and correction tests that start a bridge."""
    folder.mkdir()
    (folder / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    return folder
