"""Starting the finisher (graph.owner.finisher) as a front leaves with graph work unfinished.

It is started through a launcher (`--detach`) that starts it in a session of its own and exits at
once: neither a signal to the front's process group nor a kill of the front's process tree reaches
it. This module stays light (no service import): the service imports it, and the launcher runs it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from graph.core.child_python import child_env, module_command


def command(workspace: Path, spawner: int, bound_sec: float, detach: bool) -> list[str]:
    """Isolated from the working folder like every child (graph.core.child_python)."""
    args = ["--workspace", str(workspace), "--spawner", str(spawner), "--bound-sec", str(bound_sec)]
    return module_command("graph.owner.finisher", *args, *(["--detach"] if detach else []))


def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=child_env(),
    )


def hand_on(workspace: Path, bound_sec: float) -> None:
    """Start the finisher for `workspace` (blocks about 0.1 s for the launcher to exit)."""
    launcher = start(command(workspace, os.getpid(), bound_sec, detach=True))
    with contextlib.suppress(subprocess.TimeoutExpired):  # never holds the front's exit up for long
        launcher.wait(timeout=10)
