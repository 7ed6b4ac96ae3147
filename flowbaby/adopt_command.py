"""`flowbaby adopt [FOLDER]`: the user says the files flowbaby reads in this folder's `.flowbaby/` are theirs.

Flowbaby trusts `link.json`, `server.json`, `api_token`, the memory store and the session index
only when it wrote them in that folder (their seals, graph.core.seal); a repository or an archive
can supply them with any mode. A workspace made before seals, or moved or copied elsewhere, is
refused with a message that names this command: it seals those files as they are, and never runs by
itself (INGEST_CONTRACT.md 9.1). An unsealed `link.json` or `server.json` decides where memories go, so
adopt names where each points and seals only after the person says yes: on a terminal it asks, a script
passes `--yes`, and with neither nothing is sealed.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.api import AdoptQuestion


def add_adopt_command(commands: Any) -> None:
    parser = commands.add_parser(
        "adopt", help="seal this folder's .flowbaby files as yours (a workspace from before seals, or moved)"
    )
    parser.add_argument("folder", nargs="?", default=".", help="the workspace (default: the current folder)")
    parser.add_argument(
        "--yes", action="store_true", help="seal a link.json or server.json without asking (it is named on stderr)"
    )


def _confirm(args: argparse.Namespace, questions: list[AdoptQuestion]) -> bool:
    """Name where each file points, then the person's answer: --yes, or y on a terminal; no terminal is no."""
    for question in questions:
        print(f"flowbaby adopt: {question.path} {question.says}", file=sys.stderr)
    if args.yes:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        print("flowbaby adopt: no terminal to ask on, and no --yes", file=sys.stderr)
        return False
    print("Seal it as yours (you made it, and memories may go there)? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run_adopt_command(args: argparse.Namespace) -> int:
    from graph.api import adopt_workspace
    from graph.core.contract import FlowbabyError  # the engine only when a command runs (--help stays fast)

    try:
        reply = adopt_workspace(args.folder, lambda questions: _confirm(args, questions))
    except FlowbabyError as error:
        print(f"flowbaby adopt: {error.code.value}: {error.message}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:
        message = f"the memory store is not a readable SQLite database: {exc}"
        print(f"flowbaby adopt: FLOWBABY_ERROR: {message}", file=sys.stderr)
        return 1
    print(json.dumps({"success": True, **reply}))
    return 0
