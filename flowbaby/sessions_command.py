"""`flowbaby sessions list|import|update|repair|search`: the agents' own sessions, from the shell.

Works whether or not a bridge or `serve` owns the workspace (then the call goes through it)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from graph.core.contract import ContractFailure, FlowbabyError
from graph.service import EXIT_WORKSPACE_UNAVAILABLE, open_service


def add_sessions_command(commands: Any) -> None:
    parser = commands.add_parser(
        "sessions", help="index and search the OpenCode and Claude Code sessions of a workspace"
    )
    parser.add_argument("action", choices=("list", "import", "update", "repair", "search"))
    parser.add_argument("session_id", nargs="?", help="the session (import, update, repair; optional for search)")
    parser.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    parser.add_argument("--cwd", help="only sessions under this folder (list, search)")
    parser.add_argument("--source", choices=("opencode", "claude-code"), help="one source only")
    parser.add_argument("-q", "--query", help="what to search for (search)")
    parser.add_argument("--limit", type=int, default=10, help="results (search)")
    parser.add_argument(
        "--abstain", action="store_true", help="search: nothing, and 2 weak candidates, if no turn is close"
    )
    parser.add_argument("--all", action="store_true", help="with import or update: every session under --cwd")


async def _run(args: argparse.Namespace) -> int:
    service = await open_service("sessions", args.workspace)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        base: dict[str, Any] = {"source": args.source}
        if args.action == "list":
            reply = await service.sessions("list", {**base, "cwd": args.cwd})
        elif args.action == "search":
            params = {**base, "q": args.query, "limit": args.limit, "abstain": args.abstain}
            if args.session_id:
                reply = await service.sessions("search", {**params, "session_id": args.session_id})
            else:
                reply = await service.sessions("search_all", {**params, "cwd": args.cwd})
        elif args.session_id:
            reply = await service.sessions(args.action, {**base, "session_id": args.session_id})
        elif args.all:
            listed = await service.sessions("list", {**base, "cwd": args.cwd})
            reply = {
                "sessions": [
                    await service.sessions(args.action, {"session_id": s["session_id"], "source": s["source"]})
                    for s in listed["sessions"]
                ]
            }
        else:
            print(f"flowbaby sessions {args.action}: give a session id, or --all", file=sys.stderr)
            return 2
    except ContractFailure as error:
        print(json.dumps(error.to_response(), indent=2))
        return 1
    finally:
        await service.close(1.0)
    print(json.dumps(reply, indent=2, ensure_ascii=False))
    return 0


def run_sessions_command(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
