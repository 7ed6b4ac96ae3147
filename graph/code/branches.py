"""Which branch and commit a memory was made on, and whether the reader's checkout contains it.

A memory records the checkout of the folder it came from (the front's worktree, which may not be
the folder that owns the store). When it is read from a checkout whose HEAD does not contain that
commit (`git merge-base --is-ancestor`), it was made on a branch not merged into the current one:
the entry is marked so and ranks a little lower, never hidden."""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from graph.code.freshness import find_repo, read_head, run_git

COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A full SHA-1 or SHA-256 object id: anything else read from a repository's files is not passed to git."""


@dataclass(frozen=True)
class Checkout:
    top: Path
    branch: str | None
    """Null on a detached HEAD."""
    commit: str | None
    """Null before the first commit."""


def checkout(folder: Path) -> Checkout | None:
    """The git checkout holding `folder`, read from files (no process), or None outside a repository."""
    repo = find_repo(folder)
    if repo is None:
        return None
    try:
        head = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    branch = head.removeprefix("ref:").strip().removeprefix("refs/heads/") if head.startswith("ref:") else None
    commit = read_head(repo)
    return Checkout(repo.top, branch, commit if commit and COMMIT_ID.fullmatch(commit) else None)


class Ancestry:
    """`merged(commit, checkout)`: is the commit in the checkout's history? Cached per (commit, HEAD)."""

    def __init__(self, git: str | None = None) -> None:
        self.git = git if git is not None else shutil.which("git")
        self._known: dict[tuple[str, str], bool | None] = {}
        self._lock = threading.Lock()
        self.git_calls = 0

    def merged(self, commit: str, reader: Checkout) -> bool | None:
        """True or False; None when git cannot tell (no git, an unknown commit: another clone's)."""
        if reader.commit is None or self.git is None or not COMMIT_ID.fullmatch(commit):
            return None
        if commit == reader.commit:
            return True
        key = (commit, reader.commit)
        if key in self._known:
            return self._known[key]
        self.git_calls += 1
        done = run_git(self.git, reader.top, "merge-base", "--is-ancestor", commit, reader.commit)
        answer = None if done is None or done.returncode not in (0, 1) else done.returncode == 0
        with self._lock:
            if len(self._known) > 50_000:
                self._known.clear()
            self._known[key] = answer
        return answer
