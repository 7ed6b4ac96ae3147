"""`flowbaby migrate` (a workspace's memories up into a team namespace) and `flowbaby connect`
(point a workspace's bridge and MCP server at a team server)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_team_commands(commands: Any) -> None:
    migrate = commands.add_parser(
        "migrate", help="copy a workspace's memories (every version and status) into a team namespace"
    )
    migrate.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    migrate.add_argument(
        "--to",
        help="postgresql:// URL of the team database (default: FLOWBABY_DATABASE_URL; a password on the command "
        "line is visible to other users' ps, prefer PGPASSWORD or ~/.pgpass)",
    )
    migrate.add_argument("--namespace", help="namespace (default: FLOWBABY_NAMESPACE, else the folder's name)")
    connect = commands.add_parser("connect", help="serve a workspace's bridge and MCP server from a team server")
    connect.add_argument("url", nargs="?", help="the server's base URL, https:// (http:// on loopback only)")
    connect.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    connect.add_argument("--token-file", help="a file of yours with mode 0600 that holds the bearer token")
    connect.add_argument("--namespace", help="namespace on the server (default: the folder's name)")
    connect.add_argument("--local", action="store_true", help="forget the server: serve the workspace locally again")
    for command in (migrate, connect):
        command.add_argument("--json", action="store_true", help="print the JSON answer instead of text")


def run_team_command(args: argparse.Namespace) -> int:
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, connect_workspace, migrate_workspace, team_database_url
    from graph.core.contract import ErrorCode, FlowbabyError

    try:
        if args.command == "migrate":
            url = args.to or team_database_url()
            reply = migrate_workspace(args.workspace, url, args.namespace)
        else:
            if bool(args.url) == bool(args.local):
                raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, "connect takes a server URL, or --local")
            reply = connect_workspace(args.workspace, args.url, args.token_file, args.namespace)
    except FlowbabyError as error:
        print(f"flowbaby {args.command}: {error.code.value}: {error.message}", file=sys.stderr)
        busy = error.code in (ErrorCode.WORKSPACE_BUSY, ErrorCode.INVALID_WORKSPACE_PATH)
        return EXIT_WORKSPACE_UNAVAILABLE if busy else 1
    print(json.dumps(reply, indent=2) if args.json else as_text(reply))
    return 0 if reply.get("success", True) else 1


def as_text(reply: dict[str, Any]) -> str:
    """One `key: value` line per field; lists and objects as compact JSON."""
    return "\n".join(
        f"{key}: {value if isinstance(value, str | int | float | bool) or value is None else json.dumps(value)}"
        for key, value in reply.items()
    )
