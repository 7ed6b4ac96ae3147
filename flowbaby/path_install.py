"""`make install` / `make uninstall`: `flowbaby` on the user's PATH, from this checkout.

A symlink `<bindir>/flowbaby` -> this checkout's `.venv/bin/flowbaby` (the console script, whose
first line names the venv's python). Running it again changes nothing; a file of that name that
is not such a link (another tool's `flowbaby`, a script the user wrote) is left alone and the
install fails with exit 2. A link to another checkout's flowbaby is replaced only when that
checkout is gone (a dangling link). Uninstall removes the link only if it points here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from graph.core.environment import Environment

NAME = "flowbaby"
SCRIPT = Path(".venv") / "bin" / NAME


def _ours(link: Path, target: Path) -> bool:
    return link.is_symlink() and Path(os.readlink(link)) == target


def _stale(link: Path) -> bool:
    """A link left by a flowbaby checkout that no longer exists."""
    return link.is_symlink() and not link.exists() and os.readlink(link).endswith(str(SCRIPT))


def install(bindir: Path, target: Path) -> int:
    link = bindir / NAME
    if not target.is_file():
        print(f"make install: {target} is missing; run `make setup` first", file=sys.stderr)
        return 2
    if _ours(link, target):
        print(f"{link} -> {target} (already installed)")
    elif os.path.lexists(link) and not _stale(link):
        print(
            f"make install: {link} exists and is not this checkout's flowbaby; left alone. Remove it, or "
            f"install elsewhere: make install BINDIR=/another/bin",
            file=sys.stderr,
        )
        return 2
    else:
        bindir.mkdir(parents=True, exist_ok=True)
        staging = bindir / f".{NAME}.{os.getpid()}.tmp"
        staging.unlink(missing_ok=True)
        staging.symlink_to(target)
        os.replace(staging, link)  # a stale link is replaced in one step
        print(f"{link} -> {target}")
    folders = [os.path.realpath(p) for p in Environment.read().search_path]
    if os.path.realpath(bindir) not in folders:
        print(f'{bindir} is not on your PATH: add  export PATH="{bindir}:$PATH"  to your shell profile')
    return 0


def uninstall(bindir: Path, target: Path) -> int:
    link = bindir / NAME
    if _ours(link, target) or _stale(link):
        link.unlink()
        print(f"removed {link}")
    elif os.path.lexists(link):
        print(f"make uninstall: {link} is not this checkout's flowbaby; left alone", file=sys.stderr)
        return 2
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m flowbaby.path_install")
    parser.add_argument("--bindir", required=True, help="where the flowbaby link goes (make's BINDIR)")
    parser.add_argument("--remove", action="store_true", help="take the link out again")
    args = parser.parse_args()
    checkout = Path(__file__).resolve().parent.parent
    bindir = Path(args.bindir).expanduser().absolute()
    sys.exit((uninstall if args.remove else install)(bindir, checkout / SCRIPT))


if __name__ == "__main__":
    main()
