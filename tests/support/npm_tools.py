"""Agent clients from npm for the end-to-end tests, installed once into the ignored `.tools/`
folder (CI starts from a fresh machine; later runs reuse the install)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT

TOOLS = PROJECT_ROOT / ".tools"


def npm_tool(package: str, version: str, binary: str) -> Path:
    """`node_modules/.bin/<binary>` of `package@version`, installed under .tools/ if missing."""
    folder = TOOLS / package.rsplit("/", 1)[-1]
    executable = folder / "node_modules" / ".bin" / binary
    folder.mkdir(parents=True, exist_ok=True)
    # Test files run in parallel workers (`make test`): one installs, the others wait for it.
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not executable.exists():
            _install(folder, package, version)
    return executable


def _install(folder: Path, package: str, version: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is needed to install {package}@{version} for this test")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", f"{package}@{version}"], cwd=folder, check=True, timeout=600
    )
