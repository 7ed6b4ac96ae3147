"""`flowbaby link TARGET` / `flowbaby link --remove`: a clone elsewhere shares another checkout's memory.

Worktrees of one repository need no link (they find the main checkout through git's common
directory); a separate clone does."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_link_command(commands: Any) -> None:
    parser = commands.add_parser("link", help="make this clone use another checkout's memory (or --remove)")
    parser.add_argument("target", nargs="?", help="the workspace whose memory to use (e.g. the main checkout)")
    parser.add_argument("--workspace", default=".", help="the clone (default: the current folder)")
    parser.add_argument("--remove", action="store_true", help="use this folder's own memory again")


def run_link_command(args: argparse.Namespace) -> int:
    from graph.api import link_workspace
    from graph.core.contract import FlowbabyError

    if bool(args.target) == args.remove:
        print("flowbaby link: give a TARGET, or --remove", file=sys.stderr)
        return 2
    try:
        reply = link_workspace(args.workspace, None if args.remove else args.target)
    except FlowbabyError as error:
        print(f"flowbaby link: {error.code.value}: {error.message}", file=sys.stderr)
        return 1
    print(json.dumps({"success": True, **reply}))
    return 0
