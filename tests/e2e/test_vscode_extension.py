"""The extension's node unit tests (bridge client, validateIngestRequest, throttle) against a real
`flowbaby bridge`, run with node's test runner from the Python suite so `make test` covers them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.vscode_tools import EXTENSION, ensure_extension_npm

pytestmark = pytest.mark.slow


def test_extension_unit_tests_pass() -> None:
    reason = ensure_extension_npm()
    if reason:
        pytest.skip(reason)
    npm = shutil.which("npm")
    assert npm
    env = {**os.environ, "FLOWBABY_BIN": str(Path(sys.prefix) / "bin" / "flowbaby")}
    done = subprocess.run([npm, "test"], cwd=EXTENSION, capture_output=True, text=True, timeout=900, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "# fail 0" in output, output[-3000:]
    assert "# pass " in output
