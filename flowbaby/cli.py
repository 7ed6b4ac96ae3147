"""The `flowbaby` command line: `bridge`, `serve`, `ui`, `mcp`, `install`, `uninstall`, `demo`, `graph`,
`sessions`, `tokens`, `migrate` and `connect`."""

from __future__ import annotations

import argparse
import asyncio
import sys


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (off) or a positive number per minute")
    return value


def bridge_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--workspace", required=True, help="workspace folder; state lives in <workspace>/.flowbaby/")
    parser.add_argument(
        "--request-timeout", type=float, default=60.0, help="deadline per request in seconds (BRIDGE_TIMEOUT)"
    )
    parser.add_argument(
        "--shutdown-grace", type=float, default=30.0, help="seconds running graph work may take to finish at shutdown"
    )
    parser.add_argument("--http", action="store_true", help="also serve the HTTP API from this process")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP host with --http (loopback unless --allow-remote)")
    parser.add_argument("--port", type=int, default=8766, help="HTTP port with --http")
    parser.add_argument("--allow-remote", action="store_true", help="with --http, allow binding beyond loopback")
    tls_arguments(parser)
    parser.add_argument(
        "--rate-limit-per-minute",
        type=_non_negative,
        default=None,
        help="operator override of the retrieval rate limit; 0 switches it off (trusted batch work)",
    )
    database_arguments(parser)
    return parser


def database_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        metavar="postgresql://USER@HOST:PORT/DB",
        help="the team backend (as FLOWBABY_DATABASE_URL); leave the password out of it (a command line is "
        "visible to other users) and give it in PGPASSWORD or ~/.pgpass",
    )


def use_database_url(args: argparse.Namespace) -> None:
    """--database-url becomes FLOWBABY_DATABASE_URL of this process and its graph worker (never logged)."""
    url = getattr(args, "database_url", None)
    if url:
        import os

        from graph.service import DATABASE_URL_ENV

        os.environ[DATABASE_URL_ENV] = url


def tls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls-cert", help="PEM certificate for HTTPS (required with --allow-remote)")
    parser.add_argument("--tls-key", help="PEM private key for HTTPS (required with --allow-remote)")


def run_bridge(args: argparse.Namespace) -> int:
    """Serve until shutdown, then leave at once: the stdin reader thread may still be
    blocked in a read, and interpreter teardown must not race it."""
    import os
    from functools import partial

    from bridge.server import HttpServerFactory, serve

    use_database_url(args)
    os.umask(0o077)  # whatever the service writes under .flowbaby/ is the user's alone
    http: HttpServerFactory | None = None
    if args.http:
        from api.server import bind_refusal, http_server, tls_pair

        tls = tls_pair(args.tls_cert, args.tls_key)
        refusal = bind_refusal(args.host, args.allow_remote, tls)
        if refusal:
            print(f"flowbaby bridge: {refusal}", file=sys.stderr)
            return 2
        http = partial(http_server, host=args.host, port=args.port, own_signals=False, tls=tls)

    code = asyncio.run(
        serve(args.workspace, args.request_timeout, args.shutdown_grace, args.rate_limit_per_minute, http)
    )
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="flowbaby", description="Local-first memory service for coding agents")
    commands = parser.add_subparsers(dest="command", required=True)
    bridge_arguments(commands.add_parser("bridge", help="serve JSON-RPC 2.0 on stdin/stdout"))
    serve = commands.add_parser("serve", help="serve the HTTP API (bearer token, loopback by default)")
    serve.add_argument("--workspace", required=True)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8766)
    serve.add_argument("--allow-remote", action="store_true", help="allow binding beyond loopback (needs TLS)")
    tls_arguments(serve)
    serve.add_argument("--docs", action="store_true", help="serve /docs (its page loads Swagger UI from a CDN)")
    serve.add_argument(
        "--rate-limit-per-minute",
        type=_non_negative,
        default=None,
        help="operator override of the retrieval rate limit; 0 switches it off",
    )
    database_arguments(serve)
    from flowbaby.ui_command import add_ui_command, run_ui_command

    add_ui_command(commands)
    mcp = commands.add_parser("mcp", help="serve the Flowbaby tools over MCP on stdin/stdout")
    mcp.add_argument(
        "--workspace", required=True, help="workspace folder (an absolute path: clients start it anywhere)"
    )
    mcp.add_argument(
        "--shutdown-grace",
        type=float,
        default=1.0,
        help="seconds running graph work may take to finish at exit (clients kill a server about 2 s after "
        "closing its stdin); unfinished work is parked and re-run at the next start",
    )
    mcp.add_argument(
        "--rate-limit-per-minute",
        type=_non_negative,
        default=None,
        help="operator override of the retrieval rate limit; 0 switches it off",
    )
    database_arguments(mcp)
    from flowbaby.install import CLIENTS

    for name, text in (
        ("install", "add the flowbaby MCP server (and its skill) to an agent client's config"),
        ("uninstall", "remove what install added"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("--client", required=True, choices=CLIENTS)
        command.add_argument("--scope", choices=("project", "user"), default="project")
        command.add_argument("--workspace", help="workspace folder (default: the current folder), written as absolute")
        command.add_argument("--dry-run", action="store_true", help="print the changes without writing them")
        command.add_argument("--force", action="store_true", help="allow the home folder as workspace; replace files")
    demo = commands.add_parser("demo", help="ingest example summaries through the bridge and show the graph")
    demo.add_argument("--workspace", default=".flowbaby-demo", help="demo workspace folder (created)")
    demo.add_argument("--fresh", action="store_true", help="delete the demo workspace's data first")
    from flowbaby.graph_command import add_graph_commands, run_graph_command

    add_graph_commands(commands)
    from flowbaby.sessions_command import add_sessions_command, run_sessions_command

    add_sessions_command(commands)
    from flowbaby.tokens_command import add_tokens_command, run_tokens_command

    add_tokens_command(commands)
    from flowbaby.team_command import add_team_commands, run_team_command

    add_team_commands(commands)
    args = parser.parse_args(argv)
    if args.command == "ui":
        sys.exit(run_ui_command(args))
    if args.command in ("migrate", "connect"):
        sys.exit(run_team_command(args))
    use_database_url(args)
    if args.command in ("serve", "mcp", "sessions"):  # run_bridge sets it for the bridge
        import os

        os.umask(0o077)  # whatever the service writes under .flowbaby/ is the user's alone
    if args.command == "sessions":
        sys.exit(run_sessions_command(args))
    if args.command == "graph":
        sys.exit(run_graph_command(args))
    if args.command == "tokens":
        sys.exit(run_tokens_command(args))
    if args.command == "bridge":
        sys.exit(run_bridge(args))
    if args.command in ("install", "uninstall"):
        from flowbaby.install import run as run_install

        remove = args.command == "uninstall"
        sys.exit(
            run_install(args.client, args.scope, args.workspace, dry_run=args.dry_run, force=args.force, remove=remove)
        )
    if args.command == "mcp":
        from api.mcp_stdio import run as run_mcp

        sys.exit(run_mcp(args.workspace, args.rate_limit_per_minute, args.shutdown_grace))
    if args.command == "serve":
        from api.server import run, tls_pair

        tls = tls_pair(args.tls_cert, args.tls_key)
        sys.exit(
            run(args.workspace, args.host, args.port, args.allow_remote, args.rate_limit_per_minute, tls, args.docs)
        )
    from flowbaby.demo import run_demo

    sys.exit(run_demo(args.workspace, fresh=args.fresh))
