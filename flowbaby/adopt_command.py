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
import sqlite3
import sys
from typing import Any


def add_adopt_command(commands: Any) -> None:
    parser = commands.add_parser(
        "adopt", help="seal this folder's .flowbaby files as yours (a workspace from before seals, or moved)"
    )
    parser.add_argument("folder", nargs="?", default=".", help="the workspace (default: the current folder)")


def run_adopt_command(args: argparse.Namespace) -> int:
    from graph.api import adopt_workspace
    from graph.core.contract import FlowbabyError  # the engine only when a command runs (--help stays fast)

    try:
        reply = adopt_workspace(args.folder)
    except FlowbabyError as error:
        print(f"flowbaby adopt: {error.code.value}: {error.message}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:
        message = f"the memory store is not a readable SQLite database: {exc}"
        print(f"flowbaby adopt: FLOWBABY_ERROR: {message}", file=sys.stderr)
        return 1
    print(json.dumps({"success": True, **reply}))
    return 0
