"""Which of a workspace's data files git would take, asked of git itself (`flowbaby install` says so).

`.flowbaby/.gitignore` is flowbaby's own (graph.core.workspace.keep_out_of_git), but a file git already
tracks is not subject to any ignore rule, and a user's git may be configured in ways no file here
shows: so what install prints is git's answer for the actual files, not what the file was meant to do.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from graph.code.freshness import run_git
from graph.core.workspace import WorkspacePaths

DATA_FILES = (
    "memories.sqlite",
    "memories.sqlite-wal",
    "memories.sqlite.seal",
    "api_token",
    "api_token.seal",
    "agent_audit.log",
    "owner.lock",
    "logs/flowbaby.log",
    "sessions/index.sqlite",
    "graph/projection.json",
    "cognee/system/databases/cognee_db",
)
"""Files every embedded workspace holds or will hold, checked even before they exist."""


@dataclass
class GitIgnoreReport:
    """git's answer for the data files: `repository` False when the folder is in no git work tree (or
    git is not installed); `taken` the files (relative to the workspace) git would add or commit."""

    repository: bool
    checked: int = 0
    taken: list[str] = field(default_factory=list)


def data_files_git_takes(paths: WorkspacePaths) -> GitIgnoreReport:
    """`git check-ignore` on every file under `.flowbaby/` and on DATA_FILES (a tracked file is never
    ignored, so it is reported as taken too)."""
    git = shutil.which("git")
    if git is None:
        return GitIgnoreReport(repository=False)
    inside = run_git(git, paths.root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != b"true":
        return GitIgnoreReport(repository=False)
    prefix = paths.data.name
    found = {
        str(p.relative_to(paths.root))
        for p in paths.data.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.name != ".gitignore"  # a rule, not data
    }
    candidates = sorted(found | {f"{prefix}/{name}" for name in DATA_FILES})
    done = run_git(git, paths.root, "check-ignore", "--", *candidates)
    if done is None or done.returncode not in (0, 1):
        return GitIgnoreReport(repository=True, checked=0, taken=candidates)  # git could not tell: say so
    # One path a line; a name git quotes (a newline, a quote in it) matches nothing: reported as taken.
    ignored = set(done.stdout.decode("utf-8", errors="replace").splitlines())
    return GitIgnoreReport(repository=True, checked=len(candidates), taken=[c for c in candidates if c not in ignored])
