"""How flowbaby starts its own Python children without importing from the working folder.

`python -m module` puts the working folder first on sys.path, and fronts run in the user's
workspace: a repository that commits `json.py` (or a `graph/` package) would run its code in
every child. Children get `-P` (no working folder, no script folder) and a PYTHONPATH of
absolute entries only, with flowbaby's own source root first, so they import the same
flowbaby as their parent and nothing from the folder they run in (INGEST_CONTRACT.md 9.1).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from graph.core.environment import child_base

SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the graph, api and bridge packages: the project (editable or a checkout)
or site-packages (an installed wheel)."""


def module_command(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args...`, isolated from the working folder."""
    return [sys.executable, "-P", "-m", module, *args]


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) with PYTHONPATH reduced to absolute
    entries after SOURCE_ROOT: an empty or relative entry names the working folder."""
    env = dict(child_base() if base is None else base)
    entries = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(e)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([str(SOURCE_ROOT), *entries]))
    return env


def run_module(what: str, module: str, *args: str) -> None:
    """Run `python -m module args...` isolated, to its end; RuntimeError naming `what` and the
    child's last stderr line if it fails."""
    done = subprocess.run(module_command(module, *args), env=child_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{what} failed: {tail[0]}")
