"""`flowbaby start` and `flowbaby stop`: a workspace's service, by hand (the hooks and `flowbaby ui`
start it themselves).

`start` runs `flowbaby serve --port 0 --idle-exit SEC` detached (through the safe launcher) unless the
workspace's service runs already, and waits until it answers; it leaves by itself after SEC idle.
`stop` sends it SIGTERM and waits: it parks a running graph batch within seconds, and the next owner
(or the finisher it hands on to) runs it again. `flowbaby status` shows it (INGEST_CONTRACT.md 9.2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

STOP_WAIT_SEC = 10.0
"""A service exits within 5 s of SIGTERM; twice that before `stop` says it did not."""


def add_service_commands(commands: Any) -> None:
    start = commands.add_parser("start", help="start the workspace's service (the hooks do it themselves)")
    start.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    start.add_argument(
        "--idle-exit",
        type=float,
        default=None,
        metavar="SEC",
        help="exit after SEC seconds idle (default: $FLOWBABY_IDLE_EXIT_SEC or 1800; 0: never)",
    )
    stop = commands.add_parser("stop", help="stop the workspace's service (graph work is parked, never lost)")
    stop.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")


def describe(record: dict[str, Any]) -> str:
    host = record.get("host", "127.0.0.1")
    return f"pid {record['pid']} on http://{host}:{record['port']} since {record.get('since')}"


def run_service_command(args: argparse.Namespace) -> int:
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, resolve_workspace, service_record
    from graph.core.contract import FlowbabyError  # the engine only when a command runs (--help stays fast)

    try:
        paths = resolve_workspace(Path(args.workspace).expanduser().resolve(), create=args.command == "start")
    except FlowbabyError as error:
        print(f"flowbaby {args.command}: {error.message}", file=sys.stderr)
        return 3
    if args.command == "stop":
        record, stopped = service_record.stop(paths, STOP_WAIT_SEC)
        if record is None:
            print(f"flowbaby stop: no service runs for {paths.root}", file=sys.stderr)
            return 1
        if not stopped:
            print(f"flowbaby stop: pid {record['pid']} did not exit within {STOP_WAIT_SEC:g} s", file=sys.stderr)
            return 1
        print(f"stopped the service of {paths.root} (pid {record['pid']})")
        return 0
    idle = service_record.idle_exit_sec() if args.idle_exit is None else max(0.0, args.idle_exit)
    try:
        record, started = service_record.ensure(paths, idle)
    except service_record.ServiceFailed as failed:
        print(f"flowbaby start: the service did not start: {failed.said}", file=sys.stderr)
        return failed.code if failed.code == EXIT_WORKSPACE_UNAVAILABLE else 1
    if record is None:
        log = paths.logs / "service.log"
        print(f"flowbaby start: the service did not start; see {log}", file=sys.stderr)
        return 1
    print(f"{'started' if started else 'already running'}: the service of {paths.root}, {describe(record)}")
    return 0
