"""`flowbaby adopt [FOLDER]`: the user says the files flowbaby reads in this folder's `.flowbaby/` are theirs.

Flowbaby trusts `link.json`, `server.json`, `api_token`, the memory store and the session index
only when it wrote them in that folder (their seals, graph.core.seal); a repository or an archive
can supply them with any mode. A workspace made before seals, or moved or copied elsewhere, is
refused with a message that names this command: it seals those files as they are, and never runs by
itself (INGEST_CONTRACT.md 9.1).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from api.auth import TOKEN_FILE, TOKEN_PURPOSE
from graph.backends.backend import adopt_stores
from graph.core.contract import FlowbabyError
from graph.core.seal import adopt_file
from graph.core.workspace import DATA_DIR, LINK_FILE, LINK_PURPOSE, resolve_workspace
from graph.remote.settings import SERVER_PURPOSE, server_file


def add_adopt_command(commands: Any) -> None:
    parser = commands.add_parser(
        "adopt", help="seal this folder's .flowbaby files as yours (a workspace from before seals, or moved)"
    )
    parser.add_argument("folder", nargs="?", default=".", help="the workspace (default: the current folder)")


def adopt(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Seal what flowbaby reads for `folder`: its link.json, then the workspace it names (or its own):
    server.json, api_token, the session index and the memory store, each only if present."""
    here = Path(folder).expanduser().resolve()
    sealed: list[str] = []
    link = here / DATA_DIR / LINK_FILE
    if os.path.lexists(link):
        adopt_file(link, LINK_PURPOSE, here, "link file")
        sealed.append(str(link))
    paths = resolve_workspace(here)
    for path, purpose, what in (
        (server_file(paths), SERVER_PURPOSE, "server settings"),
        (paths.data / TOKEN_FILE, TOKEN_PURPOSE, "API token file"),
    ):
        if os.path.lexists(path):
            adopt_file(path, purpose, paths.root, what)
            sealed.append(str(path))
    stores, memories = adopt_stores(paths)
    return {"workspace": str(paths.root), "sealed": [*sealed, *stores], "memories": memories}


def run_adopt_command(args: argparse.Namespace) -> int:
    try:
        reply = adopt(args.folder)
    except FlowbabyError as error:
        print(f"flowbaby adopt: {error.code.value}: {error.message}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:
        message = f"the memory store is not a readable SQLite database: {exc}"
        print(f"flowbaby adopt: FLOWBABY_ERROR: {message}", file=sys.stderr)
        return 1
    print(json.dumps({"success": True, **reply}))
    return 0
