"""The `flowbaby` command line: `bridge`, `serve`, `start`, `stop`, `ui`, `mcp`, `install`, `uninstall`, `demo`,
`graph`, `sessions`, `status`, `repair`, `memories`, `search`, `export`, `import`, `tokens`, `migrate`, `connect`,
`hook`, `link` and `adopt`.

Start-up is part of every command's latency (`--version` ~0.1 s): this module and the command modules
import the engine (graph.api: pydantic, numpy, networkx) only inside the command that needs it."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from typing import Any

WORKSPACE_HELP = "workspace folder; state lives in <workspace>/.flowbaby/ (default: the current folder)"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in its help, unless it has none worth showing or the help names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False) or "default" in text:
            return text
        return super()._get_help_string(action)


class FlowbabyParser(argparse.ArgumentParser):
    """argparse with defaults in the help, and a suggestion for a mistyped option (argparse's own
    `suggest_on_error` needs Python 3.14). Subcommands inherit the class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not hasattr(parsed, "_innermost"):  # the subcommand the stray options were given to
            parsed._innermost = self
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        parser: FlowbabyParser = vars(parsed).pop("_innermost", self)
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}{parser.suggestion(extras)}")
        return parsed

    def suggestion(self, extras: list[str]) -> str:
        """' (did you mean --workspace?)' for the closest known option to each mistyped one."""
        known = [option for option in self._option_string_actions if option.startswith("--")]
        guesses = []
        for extra in extras:
            name = extra.split("=", 1)[0]
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) if name.startswith("--") else []
            guesses += [f"{close[0]} for {name}"] if close else []
        return f" (did you mean {', '.join(guesses)}?)" if guesses else ""


IMPORT_KINDS = ("adr", "docs", "file", "-h", "--help")
"""What may follow `flowbaby import`; anything else is an export file's name (`import file FILE`)."""


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (off) or a positive number per minute")
    return value


def bridge_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--workspace", default=".", help=WORKSPACE_HELP)
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
        from graph.api import DATABASE_URL_ENV
        from graph.core.environment import export

        export({DATABASE_URL_ENV: url})


def tls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls-cert", help="PEM certificate for HTTPS (needed with --allow-remote)")
    parser.add_argument("--tls-key", help="PEM private key for HTTPS (needed with --allow-remote)")


def run_bridge(args: argparse.Namespace) -> int:
    """Serve until shutdown, then leave at once: the stdin reader thread may still be
    blocked in a read, and interpreter teardown must not race it."""
    import asyncio
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
        http = partial(
            http_server, host=args.host, port=args.port, own_signals=False, tls=tls, user_scope=not args.allow_remote
        )

    code = asyncio.run(
        serve(args.workspace, args.request_timeout, args.shutdown_grace, args.rate_limit_per_minute, http)
    )
    sys.stderr.flush()
    os._exit(code)


def build_parser() -> FlowbabyParser:
    """Every subcommand and option (a test holds each to a help text)."""
    from graph import __version__

    parser = FlowbabyParser(prog="flowbaby", description="Local-first memory service for coding agents")
    parser.add_argument("--version", action="version", version=f"flowbaby {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    bridge_arguments(commands.add_parser("bridge", help="serve JSON-RPC 2.0 on stdin/stdout"))
    serve = commands.add_parser("serve", help="serve the HTTP API (bearer token, loopback by default)")
    serve.add_argument("--workspace", default=".", help=WORKSPACE_HELP)
    serve.add_argument("--host", default="127.0.0.1", help="host to bind (loopback unless --allow-remote)")
    serve.add_argument("--port", type=int, default=8766, help="port to bind; pick another if it is taken")
    serve.add_argument("--allow-remote", action="store_true", help="allow binding beyond loopback (needs TLS)")
    tls_arguments(serve)
    serve.add_argument("--docs", action="store_true", help="serve /docs, Swagger UI (its files served locally)")
    serve.add_argument(
        "--idle-exit",
        type=float,
        metavar="SEC",
        help="run as the workspace's service (what `flowbaby start` runs): leave at once if one runs already, "
        "and exit after SEC seconds without a request, a connected front or graph work (0: never)",
    )
    serve.add_argument(
        "--rate-limit-per-minute",
        type=_non_negative,
        default=None,
        help="operator override of the retrieval rate limit; 0 switches it off",
    )
    database_arguments(serve)
    from flowbaby.ui_command import add_ui_command

    add_ui_command(commands)
    mcp = commands.add_parser("mcp", help="serve the Flowbaby tools over MCP on stdin/stdout")
    mcp.add_argument(
        "--workspace",
        default=".",
        help="workspace folder (default: the current folder; install writes an absolute path, since clients "
        "start the server anywhere)",
    )
    mcp.add_argument(
        "--shutdown-grace",
        type=float,
        default=1.0,
        help="seconds running graph work may take to finish at exit (clients kill a server about 2 s after "
        "closing its stdin); unfinished work is parked and handed on to a background finisher",
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
        command.add_argument(
            "--client",
            required=True,
            choices=CLIENTS,
            help="the agent client (codex: config.toml and hooks.json under .codex/ or $CODEX_HOME; gemini: "
            ".gemini/settings.json; copilot: Copilot CLI's ~/.copilot/mcp-config.json, --scope user only)",
        )
        command.add_argument(
            "--scope", choices=("project", "user"), default="project", help="this workspace only, or every project"
        )
        command.add_argument(
            "--workspace", default=".", help="workspace folder (default: the current folder), written as absolute"
        )
        command.add_argument("--dry-run", action="store_true", help="print the changes without writing them")
        command.add_argument("--force", action="store_true", help="allow the home folder as workspace; replace files")
    commands.choices["install"].add_argument(
        "--allow-tools",
        action="store_true",
        help='claude-code: add "mcp__flowbaby__*" to permissions.allow in its settings, so the flowbaby tools '
        "run without a prompt (uninstall takes it out)",
    )
    commands.choices["install"].add_argument(
        "--no-hooks",
        action="store_true",
        help="the MCP server alone: no Claude Code, Codex or Gemini hooks or OpenCode plugin (briefing, recall, "
        "capture)",
    )
    hook = commands.add_parser("hook", help="run a client hook: its JSON on stdin, what the agent sees on stdout")
    hook.add_argument(
        "event",
        choices=("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"),
        help="the client's hook event",
    )
    hook.add_argument("--workspace", help="workspace folder (default: the hook's cwd)")
    hook.add_argument(
        "--client",
        choices=("claude-code", "opencode", "codex", "gemini"),
        default="claude-code",
        help="the client running the hook",
    )
    demo = commands.add_parser("demo", help="ingest example summaries through the bridge and show the graph")
    demo.add_argument("--workspace", default=".flowbaby-demo", help="demo workspace folder (created)")
    demo.add_argument("--fresh", action="store_true", help="delete the demo workspace's data first")
    from flowbaby.graph_command import add_graph_commands
    from flowbaby.sessions_command import add_sessions_command
    from flowbaby.team_command import add_team_commands
    from flowbaby.tokens_command import add_tokens_command

    add_graph_commands(commands)
    add_sessions_command(commands)
    add_tokens_command(commands)
    add_team_commands(commands)
    from flowbaby.adopt_command import add_adopt_command
    from flowbaby.import_command import add_import_command
    from flowbaby.link_command import add_link_command
    from flowbaby.memories_command import add_export_command, add_memories_command
    from flowbaby.search_command import add_search_command
    from flowbaby.service_command import add_service_commands
    from flowbaby.status_command import add_status_commands

    add_service_commands(commands)
    add_import_command(commands)
    add_memories_command(commands)
    add_search_command(commands)
    add_export_command(commands)
    add_status_commands(commands)
    add_link_command(commands)
    add_adopt_command(commands)
    return parser


def main(argv: list[str] | None = None) -> None:
    given = sys.argv[1:] if argv is None else argv
    if given == ["--version"]:  # as argparse prints it, without building every subcommand's parser
        from graph import __version__

        print(f"flowbaby {__version__}")
        sys.exit(0)
    if given[:1] == ["hook"]:  # a client hook: latency-critical, so nothing else is imported
        from flowbaby.hook import main as hook_main

        sys.exit(hook_main(given[1:]))
    if given[:1] == ["import"] and len(given) > 1 and given[1] not in IMPORT_KINDS:
        given = ["import", "file", *given[1:]]  # `flowbaby import FILE`: an export file
    from flowbaby.graph_command import run_graph_command
    from flowbaby.import_command import run_import_command
    from flowbaby.link_command import run_link_command
    from flowbaby.memories_command import run_memories_command, run_transfer_command
    from flowbaby.search_command import run_search_command
    from flowbaby.service_command import run_service_command
    from flowbaby.sessions_command import run_sessions_command
    from flowbaby.status_command import run_status_command
    from flowbaby.team_command import run_team_command
    from flowbaby.tokens_command import run_tokens_command
    from flowbaby.ui_command import run_ui_command

    if given[:1] not in (["bridge"], ["mcp"], ["serve"]):  # their stdout carries protocol messages
        from flowbaby.terminal import guard_output

        guard_output()  # a memory's text is shown, never run by the terminal (flowbaby/terminal.py)
    args = build_parser().parse_args(given)
    if args.command == "ui":
        sys.exit(run_ui_command(args))
    if args.command in ("migrate", "connect"):
        sys.exit(run_team_command(args))
    if args.command == "link":
        sys.exit(run_link_command(args))
    if args.command == "adopt":
        from flowbaby.adopt_command import run_adopt_command

        sys.exit(run_adopt_command(args))
    if args.command in ("start", "stop"):
        sys.exit(run_service_command(args))
    use_database_url(args)
    private = ("serve", "mcp", "sessions", "import", "export", "memories", "search", "status", "repair")
    if args.command in private:  # run_bridge sets it for the bridge
        import os

        os.umask(0o077)  # whatever the service writes under .flowbaby/ is the user's alone
    runners: dict[str, Callable[[argparse.Namespace], int]] = {
        "sessions": run_sessions_command,
        "status": run_status_command,
        "repair": run_status_command,
        "memories": run_memories_command,
        "search": run_search_command,
        "export": run_transfer_command,
        "import": run_import_command,
        "graph": run_graph_command,
        "tokens": run_tokens_command,
        "bridge": run_bridge,
    }
    if args.command in runners:
        sys.exit(runners[args.command](args))
    sys.exit(_run_rest(args))


def _run_rest(args: argparse.Namespace) -> int:
    """install, uninstall, mcp, serve and demo: the commands main() does not dispatch by table."""
    if args.command in ("install", "uninstall"):
        from flowbaby.install import run as run_install

        remove = args.command == "uninstall"
        allow = getattr(args, "allow_tools", False)
        return run_install(
            args.client,
            args.scope,
            args.workspace,
            dry_run=args.dry_run,
            force=args.force,
            remove=remove,
            allow_tools=allow,
            hooks=not getattr(args, "no_hooks", False),
        )
    if args.command == "mcp":
        from api.mcp_stdio import run as run_mcp

        return run_mcp(args.workspace, args.rate_limit_per_minute, args.shutdown_grace)
    if args.command == "serve":
        import asyncio

        from api.server import serve, tls_pair

        tls = tls_pair(args.tls_cert, args.tls_key)
        server = serve(
            args.workspace,
            args.host,
            args.port,
            args.allow_remote,
            args.rate_limit_per_minute,
            tls,
            args.docs,
            args.idle_exit,
        )
        return asyncio.run(server)
    from flowbaby.demo import run_demo

    return run_demo(args.workspace, fresh=args.fresh)
