"""The project's commands as a user runs them: a subprocess of this tree's code, its output kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bridge.client import PROJECT_ROOT

CLI = [sys.executable, "-c", "from flowbaby.cli import main; main()"]


def run_flowbaby(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, **run: Any
) -> subprocess.CompletedProcess[str]:
    """`flowbaby <args>` with text output; the exit code is the caller's to check. Without `env`,
    this environment with PYTHONPATH set to the tree."""
    env = env if env is not None else {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=timeout, **run)


def run_bridge_to_exit(workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """A bridge on `workspace` given nothing on stdin: for the cases where it must refuse to start."""
    return subprocess.run(
        [sys.executable, "-m", "bridge", "--workspace", str(workspace)],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def serve_pids(workspace: Path) -> list[int]:
    """Live `flowbaby serve` processes for `workspace` (a zombie has no command line)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in words and str(workspace).encode() in words:
            found.append(int(entry.name))
    return found
