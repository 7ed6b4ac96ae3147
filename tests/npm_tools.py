"""Agent clients from npm for the end-to-end tests, installed once into the ignored `.tools/`
folder (CI starts from a fresh machine; later runs reuse the install)."""

from __future__ import annotations

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
    if not executable.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"npm is needed to install {package}@{version} for this test")
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", f"{package}@{version}"], cwd=folder, check=True, timeout=600
        )
    return executable
