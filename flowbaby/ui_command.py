"""`flowbaby ui`: open the memory browser of a workspace, signed in by a one-time link.

It reuses the workspace's `flowbaby serve` on --port when one answers there (its authorized
health names this workspace), else starts one in the background (it keeps running after this
command ends; its output goes to .flowbaby/logs/ui-serve.log). It then asks the server, with the
workspace's token, for a one-time code, prints the link and opens the browser on it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

START_TIMEOUT_SEC = 120.0
"""A cold start loads the embedding model and cognee; a first start may take this long."""


def add_ui_command(commands: Any) -> None:
    ui = commands.add_parser("ui", help="open the memory browser (starts or reuses the workspace's serve)")
    ui.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
    ui.add_argument("--port", type=int, default=8766, help="port of the workspace's serve (started there if none)")
    ui.add_argument("--no-open", action="store_true", help="print the sign-in link without opening a browser")


def _call(url: str, token: str, method: str = "GET", timeout: float = 5.0) -> dict[str, Any]:
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310 - loopback URL we built
        return dict(json.loads(reply.read()))


def _serves(base: str, token: str, root: Path) -> bool | None:
    """True: this workspace's server answers at base; False: another server does; None: nothing."""
    try:
        health = _call(f"{base}/api/health", token, timeout=3.0)
    except urllib.error.HTTPError:
        return False
    except (OSError, ValueError):
        return None
    return bool(health.get("workspace")) and Path(str(health["workspace"])).resolve() == root


def _start(root: Path, port: int) -> subprocess.Popen[bytes]:
    logs = root / ".flowbaby" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = open(logs / "ui-serve.log", "ab")  # noqa: SIM115 - handed to the child
    command = [sys.executable, "-m", "flowbaby", "serve", "--workspace", str(root), "--port", str(port)]
    return subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=dict(os.environ)
    )


def run_ui_command(args: argparse.Namespace) -> int:
    from api.auth import resolve_token
    from graph.service import WorkspacePaths

    root = Path(args.workspace).resolve()
    base = f"http://127.0.0.1:{args.port}"
    paths = WorkspacePaths(root)
    paths.data.mkdir(mode=0o700, parents=True, exist_ok=True)
    token, _ = resolve_token(paths)
    found = _serves(base, token, root)
    if found is False:
        print(
            f"flowbaby ui: {base} is another workspace's server (or refuses this token); pass --port", file=sys.stderr
        )
        return 2
    if found is None:
        child = _start(root, args.port)
        print(f"flowbaby ui: started flowbaby serve (pid {child.pid}) on {base}", file=sys.stderr)
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while not _serves(base, token, root):
            if child.poll() is not None or time.monotonic() > deadline:
                print(f"flowbaby ui: the server did not start; see {paths.logs / 'ui-serve.log'}", file=sys.stderr)
                return 1
            time.sleep(0.3)
    code = _call(f"{base}/api/ui/codes", token, method="POST")
    link = f"{base}{code['path']}"
    print(link, flush=True)
    print(f"flowbaby ui: a one-time link, valid {code['expiresInSec']} s", file=sys.stderr)
    if not args.no_open:
        from flowbaby.browser_handoff import open_link

        open_link(link)  # through a private file: a browser's command line is readable by every user
    return 0
