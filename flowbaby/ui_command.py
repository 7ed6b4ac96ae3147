"""`flowbaby ui`: open the memory browser of a workspace, signed in by a one-time link.

It reuses the workspace's service (`.flowbaby/service.json`: its pid and port) or starts it as
`flowbaby start` does (a free port, detached through the safe launcher, leaving when idle), so each
project gets its own port and no --port is needed. Before it sends the workspace's token anywhere it
asks the server at that port to prove it holds the token (`/api/health?challenge=`: an HMAC bound to
that port): a process squatting on the port gets nothing and its link is never handed out. It then
asks for a one-time code, prints the link and hands it to the browser through a private file
(flowbaby/browser_handoff.py), never on the browser's command line.
"""

from __future__ import annotations

import argparse
import hmac
import json
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any


def add_ui_command(commands: Any) -> None:
    ui = commands.add_parser("ui", help="open the memory browser (starts or reuses the workspace's service)")
    ui.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    ui.add_argument("--no-open", action="store_true", help="print the sign-in link without opening a browser")


def _call(url: str, token: str | None, method: str = "GET", timeout: float = 5.0) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310 - loopback URL we built
        return dict(json.loads(reply.read()))


def proves_identity(base: str, port: int, token: str) -> bool:
    """Whether the server at `base` holds this workspace's token; nothing secret is sent to ask."""
    from graph.api import service_record

    challenge = secrets.token_hex(32)
    try:
        reply = _call(f"{base}/api/health?{urllib.parse.urlencode({'challenge': challenge})}", None, timeout=5.0)
    except (OSError, ValueError):
        return False
    expected = service_record.server_proof(token, port, challenge)
    return hmac.compare_digest(str(reply.get("proof") or ""), expected)


def run_ui_command(args: argparse.Namespace) -> int:
    from api.auth import resolve_token
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, resolve_workspace, service_record
    from graph.core.contract import FlowbabyError

    try:
        paths = resolve_workspace(Path(args.workspace).expanduser().resolve())
        token, _ = resolve_token(paths)
    except FlowbabyError as error:
        print(f"flowbaby ui: {error.message}", file=sys.stderr)
        return 3
    try:
        record, started = service_record.ensure(paths, service_record.idle_exit_sec())
    except service_record.ServiceFailed as failed:
        print(f"flowbaby ui: the service did not start: {failed.said}", file=sys.stderr)
        return failed.code if failed.code == EXIT_WORKSPACE_UNAVAILABLE else 1
    if record is None:
        print(f"flowbaby ui: the service did not start; see {paths.logs / 'service.log'}", file=sys.stderr)
        return 1
    port = int(record["port"])
    base = f"http://127.0.0.1:{port}"
    if started:
        print(f"flowbaby ui: started the workspace's service (pid {record['pid']}) on {base}", file=sys.stderr)
    if not proves_identity(base, port, token):
        print(
            f"flowbaby ui: the server on {base} did not prove it is this workspace's service; nothing was sent "
            "to it (`flowbaby stop`, then try again)",
            file=sys.stderr,
        )
        return 1
    try:
        code = _call(f"{base}/api/ui/codes", token, method="POST")
    except (OSError, ValueError) as exc:
        print(f"flowbaby ui: {base} gave no sign-in code: {exc}", file=sys.stderr)
        return 1
    link = f"{base}{code['path']}"
    print(link, flush=True)
    print(f"flowbaby ui: a one-time link, valid {code['expiresInSec']} s", file=sys.stderr)
    if not args.no_open:
        from flowbaby.browser_handoff import open_link

        open_link(link)  # through a private file: a browser's command line is readable by every user
    return 0
