"""Which folder keeps a workspace's memory: `flowbaby link`'s target, a worktree's main checkout, or
the folder itself. The standard library alone, so the command line finds a running owner without
loading the engine (flowbaby/owner_line.py), and the paths of a workspace's files; graph.core.workspace
re-exports these names."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = ".flowbaby"
LINK_FILE = "link.json"
"""`<folder>/.flowbaby/link.json`, written by `flowbaby link`: this folder's memory lives in another workspace."""
LINK_PURPOSE = "link"
"""link.json's seal purpose (graph.core.seal)."""


@dataclass(frozen=True)
class WorkspacePaths:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / DATA_DIR

    @property
    def store_db(self) -> Path:
        return self.data / "memories.sqlite"

    @property
    def vectors(self) -> Path:
        return self.data / "vectors.lance"

    @property
    def catalog_snapshot(self) -> Path:
        return self.data / "catalog.npz"

    @property
    def cognee_system(self) -> Path:
        return self.data / "cognee" / "system"

    @property
    def cognee_data(self) -> Path:
        return self.data / "cognee" / "data"

    @property
    def cognee_cache(self) -> Path:
        return self.data / "cognee" / "cache"

    @property
    def cognee_env(self) -> Path:
        # An empty file: pins cognee's dotenv lookup so no .env above the cwd leaks in.
        return self.data / "cognee" / "cognee.env"

    @property
    def projection(self) -> Path:
        return self.data / "graph" / "projection.json"

    @property
    def logs(self) -> Path:
        return self.data / "logs"

    @property
    def audit_log(self) -> Path:
        return self.data / "agent_audit.log"

    @property
    def lock_file(self) -> Path:
        return self.data / "owner.lock"

    @property
    def api_token(self) -> Path:
        """The HTTP API's generated token (api/auth.py), sealed (graph.core.seal, API_TOKEN_PURPOSE)."""
        return self.data / "api_token"

    @property
    def env_file(self) -> Path:
        return self.root / ".env"

    @property
    def git_ignore(self) -> Path:
        return self.data / ".gitignore"


def shared_root(root: Path) -> Path:
    """The workspace that keeps `root`'s memory: the target of its `flowbaby link`, else, for a linked
    git worktree, the repository's main checkout (found through git's common directory, read from
    the `.git` file and `commondir` as `git rev-parse --git-common-dir` does, without running git in
    a repository that may be hostile), else `root` itself. A worktree that already holds its own
    memory store keeps it."""
    linked = read_link(root)
    if linked is not None:
        return linked
    if (root / DATA_DIR / "memories.sqlite").exists():
        return root
    main = main_checkout(root)
    return main if main is not None else root


def main_checkout(root: Path) -> Path | None:
    """The main working tree of the repository `root` is a linked worktree of, or None. A `.git` file
    alone proves nothing (an unpacked archive can name any folder as its git dir, with a `commondir`
    leading to another project's repository): the worktree counts only when git's own back-link,
    `<common>/worktrees/<name>/gitdir`, names this folder's `.git` file."""
    dot = root / ".git"
    if not dot.is_file():
        return None
    try:
        line = _small_text(dot)
        git_dir = (root / line.removeprefix("gitdir:").strip()).resolve()
        common = (git_dir / _small_text(git_dir / "commondir")).resolve()
        back = (git_dir / _small_text(git_dir / "gitdir")).resolve()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:") or common.name != ".git" or not common.is_dir():
        return None  # a bare repository or a submodule: no main checkout to share
    if git_dir.parent != common / "worktrees" or back != dot.resolve():
        return None  # not a worktree git made here: the folder is its own workspace
    main = common.parent
    return main if main != root and main.is_dir() else None


def _small_text(path: Path) -> str:
    """The stripped text of a small regular file, read without following a link or blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read(4096).decode("utf-8").strip()


def sharing_note(folder: Path, root: Path) -> str | None:
    """What a front says when the folder it was given (resolved) keeps its memory in the workspace
    `root` that shared_root chose, or None when that is the folder itself."""
    if root == folder:
        return None
    linked = os.path.lexists(folder / DATA_DIR / LINK_FILE)
    why = "its `flowbaby link`" if linked else "it is a git worktree of that checkout"
    return f"{folder} keeps its memory in the workspace {root} ({why})"


def read_link(root: Path) -> Path | None:
    """The workspace `flowbaby link` pointed `root` at, or None when `root` has no link.json. The file
    counts only if `flowbaby link` wrote it here (graph.core.seal): a link.json that arrived with a
    cloned repository or an archive, whatever its mode, is refused (INVALID_WORKSPACE_PATH)."""
    path = root / DATA_DIR / LINK_FILE
    if not os.path.lexists(path):
        return None
    from graph.core.contract import ErrorCode, FlowbabyError  # only with a link: the engine's models cost start-up
    from graph.core.seal import is_sealed, read_private_file, unsealed_message

    remedy = f"remove it, or run `flowbaby link TARGET --workspace {root}` again"
    try:
        text = read_private_file(path, "link file", remedy)
        if not is_sealed(path, LINK_PURPOSE, root, text.encode()):
            named = link_target_text(text)
            says = f"it would keep this folder's memory in {named}; " if named else ""
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, unsealed_message("link file", path, root, says + remedy))
        target = Path(json.loads(text)["workspace"])
    except FlowbabyError as error:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, error.message) from None
    except (ValueError, KeyError, TypeError):
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{path} is not a flowbaby link file; {remedy}") from None
    if not target.is_absolute() or not target.is_dir():
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH, f"{path} links to {target}, which is not a folder; {remedy}"
        )
    return target.resolve()


def link_target_text(text: str) -> str | None:
    """The folder a link.json's text names, printable, for a person to read (None when it names none):
    shown before it counts, by the refusal of an unsealed one and by `flowbaby adopt`."""
    try:
        value = json.loads(text)["workspace"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(value, str):
        return None
    return "".join(c if c.isprintable() else "?" for c in value)[:4096]
