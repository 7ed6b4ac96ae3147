"""What the tests of the memory browser in chromium share (memory browser, graph view, hardening, the
VS Code extension's): `flowbaby ui` as a person runs it and the `flowbaby serve` it starts stopped after,
and one of the headless-chromium drivers of tests/e2e/browser/ run on a CONFIG the test writes (the
driver writes what it saw to OUT, even when it fails)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.vscode_tools import ensure_browser_test_npm, ensure_debian_packages

DRIVERS = PROJECT_ROOT / "tests" / "e2e" / "browser"
SHOTS = PROJECT_ROOT / "docs"
"""Refreshed only when FLOWBABY_UPDATE_SCREENSHOT is set (as test_vscode_e2e does): a test run leaves the
tracked docs/ pictures alone."""


def shots() -> str:
    """docs/ when the screenshots are to be refreshed, else "" (the drivers then take none)."""
    return str(SHOTS) if os.environ.get("FLOWBABY_UPDATE_SCREENSHOT") else ""


def require_driver() -> None:
    """Debian's chromium, and the pinned playwright-core and axe-core of tests/e2e/browser: installed if
    missing, or the test is skipped with the reason they cannot be."""
    reason = ensure_debian_packages() or ensure_browser_test_npm()
    if reason:
        pytest.skip(reason)


def flowbaby_ui(root: Path, env: dict[str, str], *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`flowbaby ui` on `root`, which must succeed: it reuses the workspace's running server (its service
    record names it), or starts one."""
    command = [sys.executable, "-m", "flowbaby", "ui", "--workspace", str(root), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr
    return done


@contextmanager
def ui_started(root: Path) -> Iterator[tuple[subprocess.CompletedProcess[str], dict[str, str]]]:
    """`flowbaby ui --no-open` on a workspace no server holds: it starts the workspace's `flowbaby serve`,
    stopped at the end. Yields its run and the environment it had (for running it again)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_SESSIONS_WATCH": "0"}
    try:
        yield flowbaby_ui(root, env, "--no-open", timeout=300), env
    finally:
        stop_serve(root)


def stop_serve(root: Path) -> None:
    """SIGTERM the `flowbaby serve` that `flowbaby ui` started for `root` (found by its command line), and
    wait until it is gone: it outlives the test otherwise."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and str(root).encode() in args:
            pid = int(cmdline.parent.name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
                for _ in range(120):
                    os.kill(pid, 0)
                    time.sleep(0.5)


def drive(script: str, config: dict[str, object], folder: Path, timeout: float = 300) -> dict[str, Any]:
    """What `script` (a file of DRIVERS) saw when run on `config`; it must exit cleanly, else its own
    error (or node's stderr) is the failure."""
    config_file, out = folder / "config.json", folder / "seen.json"
    config_file.write_text(json.dumps(config))
    done = subprocess.run(
        ["node", str(DRIVERS / script)],
        env={**os.environ, "CONFIG": str(config_file), "OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    seen: dict[str, Any] = json.loads(out.read_text())
    assert done.returncode == 0, seen.get("error") or done.stderr
    return seen
