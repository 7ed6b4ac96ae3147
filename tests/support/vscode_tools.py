"""What the VS Code extension's tests need from outside the project, installed through the
project's own files: the pinned npm packages of extension/ (its ignored node_modules), Debian's
chromium and libkrb5-dev (apt-get, as root), and code-server built once per machine into a cache
keyed by version (extension/e2e/install-code-server.sh).

Each `ensure_*` returns None when the prerequisite is there, or the reason it cannot be had here
(no npm, no apt, no registry): the tests skip with that reason. Everything after that is the
extension's own behaviour, and failing there fails the test."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from bridge.client import PROJECT_ROOT

EXTENSION = PROJECT_ROOT / "extension"
INSTALL_CODE_SERVER = EXTENSION / "e2e" / "install-code-server.sh"
BROWSER_TEST = PROJECT_ROOT / "tests" / "e2e" / "browser"
CONFORMANCE = PROJECT_ROOT / "tests" / "e2e" / "conformance"
DEBIAN_PACKAGES = {"chromium": "chromium", "libkrb5-dev": "/usr/include/krb5.h"}


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def ensure_extension_npm() -> str | None:
    """`npm ci` in extension/ when its lock file changed since the last install."""
    return _npm_ci(EXTENSION)


def ensure_browser_test_npm() -> str | None:
    """`npm ci` in tests/e2e/browser (playwright-core and axe-core for the memory browser's test)."""
    return _npm_ci(BROWSER_TEST)


def ensure_conformance_npm() -> str | None:
    """`npm ci` in tests/e2e/conformance (the official MCP conformance suite, pinned)."""
    return _npm_ci(CONFORMANCE)


def _npm_ci(folder: Path) -> str | None:
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed"
    lock = folder / "package-lock.json"
    stamp = folder / "node_modules" / ".flowbaby-lock-sha256"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return None
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        return f"npm ci in {folder.name}/ failed (npm registry unreachable?):\n{_tail(done.stdout + done.stderr)}"
    stamp.write_text(digest)
    return None


def _missing_debian() -> list[str]:
    missing = []
    for package, probe in DEBIAN_PACKAGES.items():
        present = Path(probe).exists() if probe.startswith("/") else shutil.which(probe) is not None
        if not present:
            missing.append(package)
    return missing


def ensure_debian_packages() -> str | None:
    """apt-get install chromium and libkrb5-dev where missing (apt-get update first), as root."""
    missing = _missing_debian()
    if not missing:
        return None
    apt = shutil.which("apt-get")
    if apt is None:
        return f"Debian packages {missing} are missing and apt-get is not available"
    if os.geteuid() != 0:
        return f"Debian packages {missing} are missing and installing them needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", *missing]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env)
        if done.returncode != 0:
            return f"{' '.join(command)} failed:\n{_tail(done.stdout + done.stderr)}"
    still = _missing_debian()
    return f"Debian packages {still} still missing after apt-get install" if still else None


def ensure_code_server() -> tuple[Path | None, str | None]:
    """The cached code-server folder (built on first use, ~6-15 min), or the reason it is not there."""
    reason = ensure_debian_packages()
    if reason:
        return None, reason
    done = subprocess.run(["bash", str(INSTALL_CODE_SERVER)], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return None, f"building code-server failed:\n{_tail(done.stderr)}"
    return Path(done.stdout.strip().splitlines()[-1]), None


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "chromium vanished after ensure_debian_packages"
    return found


if __name__ == "__main__":
    import sys
    import time

    if sys.argv[1:] == ["--extension-npm"]:
        # `make lint-js`: ESLint comes from these packages, so not having them fails the check.
        missing = ensure_extension_npm()
        sys.exit(f"extension npm packages: {missing}" if missing else 0)
    # `make e2e-setup`: pay for the installs before the suite runs (a reason is printed, never fatal).
    started = time.monotonic()
    for name, reason in (
        ("extension npm packages", ensure_extension_npm()),
        ("memory browser test npm packages", ensure_browser_test_npm()),
        ("MCP conformance suite", ensure_conformance_npm()),
        ("code-server", ensure_code_server()[1]),
    ):
        print(f"{name}: {'ready' if reason is None else 'NOT AVAILABLE, its tests will skip: ' + reason}")
    print(f"e2e-setup took {time.monotonic() - started:.0f}s")
