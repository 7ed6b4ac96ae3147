"""Freshness of a memory's code references, checked when the memory is read.

A reference (`billing/reconcile.py`, `billing/`, `billing/reconcile.py:reconcile_batch`,
`LedgerLock.acquire`) is compared with the code now: `current`, `changed` (commits touching
it since the memory's updatedAt, other than the commit the memory was made at and its ancestors:
the commit that implemented a decision does not make its memory stale), `moved` (git followed a
rename), `missing` (deleted, or the symbol is gone) or `unknown`. In a git work tree the history
comes from ONE `git log -M --name-status` per HEAD over every commit since the oldest memory asked
about, walked in Python per path (that is `--follow` for every reference at once); outside a repository file
modification times stand in. Repositories may be hostile (a cloned one): git runs with no
pager, no hooks, no fsmonitor, no external diff or textconv, no optional locks, and a
deadline; a git failure degrades to the mtime basis, never to an error. A referenced path is looked at only
when its real path (committed links resolved) lies in the repository (the workspace without one), and a file
is read for a symbol only up to MAX_READ_BYTES, and only when it is a regular file (graph/core/bounded_read.py).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from graph.core.bounded_read import contained, read_prefix
from graph.core.contract import CommitInfo, Freshness, ReferenceFreshness, parse_timestamp
from graph.core.environment import Environment

log = logging.getLogger("flowbaby.freshness")

GIT_TIMEOUT_SEC = 5.0
MAX_COMMITS = 5000
"""The newest commits read per HEAD: older changes are not counted (a bound on a huge history)."""
MAX_READ_BYTES = 2 * 1024 * 1024
"""The most of one referenced file read to find a symbol in it (2 MiB): a symbol past that is not found."""
MAX_CACHED_FILES = 20_000
"""Symbol look-ups kept (by file, size and mtime) before the cache starts over."""
SAFE_GIT = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "core.quotePath=false",
    "-c", "log.showSignature=false",
    "-c", "log.follow=false",
    "-c", "diff.renames=true",
    "--no-pager",
)  # fmt: skip
"""Config a repository's own .git/config could set to run a program, overridden on every call."""
_EXTENSIONS = (
    "py pyi js jsx ts tsx mjs cjs go rs java kt kts scala c h cc cpp hpp cs rb php swift m mm sh bash zsh "
    "sql md rst txt json yaml yml toml ini cfg conf env lock xml html css scss vue svelte proto graphql "
    "tf hcl gradle mk cmake dockerfile ipynb csv"
)
FILE_EXTENSIONS = frozenset(_EXTENSIONS.split())
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"{_IDENT}(?:(?:\.|::|#){_IDENT})*")
_LINE_SUFFIX = re.compile(r"(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)$")
_EXTENSION = re.compile(r"\.([A-Za-z0-9]{1,10})$")


@dataclass(frozen=True)
class CodeRef:
    """A reference parsed as code: what to look for and where."""

    text: str
    kind: str  # file | folder | symbol
    path: str | None  # as written, relative to the workspace
    symbol: str | None


def _is_symbol(text: str) -> bool:
    """A dotted name with a class or function shape (LedgerLock.acquire, reconcile_batch), not a word."""
    if not _DOTTED.fullmatch(text):
        return False
    parts = re.split(r"\.|::|#", text)
    if len(parts) > 1:
        return parts[-1].lower() not in FILE_EXTENSIONS
    return "_" in text.strip("_") or bool(re.search(r"[a-z][A-Z]", text))


@functools.lru_cache(maxsize=4096)
def parse_reference(raw: str, root: Path | None = None) -> CodeRef | None:
    """The code a reference names, or None for prose, URLs and tickets. The first word counts
    (`billing/reconcile.py (the batch split)`); a trailing line number is dropped."""
    words = raw.strip().strip("`'\"").split()
    if not words:
        return None
    text = words[0].strip("`'\",;")
    if "://" in text or text.startswith(("mailto:", "@")) or not text:
        return None
    text = _LINE_SUFFIX.sub("", text).removesuffix("()")
    if "#" in text and ("/" in text.split("#")[0] or _EXTENSION.search(text.split("#")[0])):
        text = text.split("#")[0]  # a heading anchor (docs/design.md#storage): the file is checked
    path, _, symbol = text.partition(":") if not re.match(r"^[A-Za-z]:[\\/]", text) else (text, "", "")
    if symbol and not _DOTTED.fullmatch(symbol.removesuffix("()")):
        return None
    symbol = symbol.removesuffix("()")
    if path.endswith("/"):
        return CodeRef(raw, "folder", path.rstrip("/") or ".", None)
    match = _EXTENSION.search(path)
    looks_like_file = match is not None and match.group(1).lower() in FILE_EXTENSIONS
    if "/" in path or looks_like_file or (root is not None and (root / path).exists() and not _is_symbol(path)):
        if not symbol and root is not None and (root / path).is_dir():
            return CodeRef(raw, "folder", path.rstrip("/"), None)
        return CodeRef(raw, "symbol" if symbol else "file", path, symbol or None)
    if not symbol and _is_symbol(path):
        return CodeRef(raw, "symbol", None, path)
    return None


# -- git, read without running it where a file read will do ---------------------------------


@dataclass(frozen=True)
class Repo:
    top: Path
    git_dir: Path
    common_dir: Path


def find_repo(start: Path) -> Repo | None:
    """The work tree holding `start`, found by walking up to `.git` (a folder, or a worktree's file)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return Repo(folder, dot, dot)
        if dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = (folder / line.removeprefix("gitdir:").strip()).resolve()
            common = git_dir
            with contextlib.suppress(OSError):
                common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
            return Repo(folder, git_dir, common)
    return None


def read_head(repo: Repo) -> str | None:
    """HEAD's commit id from the ref files (no process): the key every git answer is cached under."""
    try:
        head = (repo.git_dir / "HEAD").read_text().strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.removeprefix("ref:").strip()
    for base in (repo.git_dir, repo.common_dir):
        try:
            return (base / ref).read_text().strip() or None
        except OSError:
            continue
    try:
        packed = (repo.common_dir / "packed-refs").read_text()
    except OSError:
        return None
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref:
            return commit
    return None


def _git_env() -> dict[str, str]:
    env = Environment.read().without("GIT_")
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_PAGER="cat", PAGER="cat")
    return env


def run_git(git: str, top: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """git in a repository that may be hostile (SAFE_GIT, no GIT_* from the caller, stdin closed,
    a deadline); None when it could not run. A failure other than exit 1 is logged."""
    try:
        done = subprocess.run(
            [git, *SAFE_GIT, "-C", str(top), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_SEC,
            env=_git_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("git %s failed: %s", args[0], exc)
        return None
    if done.returncode not in (0, 1):
        log.warning("git %s: %s", args[0], done.stderr.decode(errors="replace").strip()[:300])
    return done


@dataclass
class Commit:
    id: str
    time: int
    date: str
    subject: str
    changes: list[tuple[str, str, str | None]]
    """(status letter, path, new path for a rename or copy)."""
    parents: tuple[str, ...] = ()


def parse_log(output: bytes) -> list[Commit]:
    """`git log -z --name-status --format=%x1e%H%x1f%ct%x1f%cI%x1f%P%x1f%s`, newest first."""
    commits = []
    for record in output.decode("utf-8", errors="replace").split("\x1e")[1:]:
        header, _, rest = record.partition("\0")
        fields = header.split("\x1f", 4)
        if len(fields) != 5:
            continue
        tokens = [t for t in rest.lstrip("\n").split("\0")]
        changes: list[tuple[str, str, str | None]] = []
        i = 0
        while i < len(tokens):
            status = tokens[i]
            if not status:
                i += 1
                continue
            if status[0] in "RC" and i + 2 < len(tokens):
                changes.append((status[0], tokens[i + 1], tokens[i + 2]))
                i += 3
            elif i + 1 < len(tokens):
                changes.append((status[0], tokens[i + 1], None))
                i += 2
            else:
                break
        commits.append(Commit(fields[0], int(fields[1]), fields[2], fields[4], changes, tuple(fields[3].split())))
    return commits


@dataclass
class History:
    """What the commits since a time did to one path: touches, the newest, renames, deletion."""

    path: str
    commits: int = 0
    newest: Commit | None = None
    deleted: Commit | None = None


def ancestry(commits: list[Commit], commit: str | None) -> frozenset[str]:
    """`commit` and its ancestors among `commits` (the log read: older ones are outside it anyway)."""
    parents = {c.id: c.parents for c in commits}
    if not commit or commit not in parents:
        return frozenset()
    seen, todo = {commit}, [commit]
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent in parents and parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return frozenset(seen)


def follow(
    commits_oldest_first: list[Commit], path: str, since: int, folder: bool, made_at: frozenset[str] = frozenset()
) -> History:
    """Walk the commits after `since` following `path` through renames (git's --follow, for many paths).
    A commit in `made_at` (the memory's own commit and its ancestors) is followed but not counted."""
    history = History(path)
    prefix = path.rstrip("/") + "/"
    for commit in commits_oldest_first:
        if commit.time <= since:
            continue
        touched = False
        for status, old, new in commit.changes:
            if folder:
                if old.startswith(prefix) or (new or "").startswith(prefix) or path == ".":
                    touched = True
            elif status == "R" and old == history.path and new is not None:
                history.path, touched, history.deleted = new, True, None
                break
            elif (new or old) == history.path:
                touched = True
                history.deleted = commit if status == "D" else None
        if touched and commit.id not in made_at:
            history.commits += 1
            history.newest = commit
    return history


class FreshnessChecker:
    """Checks a memory's references against the workspace's code; thread-safe, cached per HEAD.

    Warm (the same HEAD, files unchanged) a check reads HEAD's ref file and stats each path:
    no process starts. `enabled=False` (a team server's namespace folder holds no code) lists
    the references as `unknown` without looking."""

    def __init__(self, workspace: Path, *, git: str | None = None, enabled: bool = True) -> None:
        self.root = workspace
        self.enabled = enabled
        self.git = git if git is not None else shutil.which("git")
        self.repo = find_repo(workspace) if enabled and self.git else None
        self._lock = threading.Lock()
        self._log: tuple[str, int, list[Commit]] | None = None
        """(HEAD, since, commits oldest first) of the last git log."""
        self._follow: dict[tuple[str, str, int, bool, frozenset[str]], History] = {}
        self._made_at: dict[tuple[str, str], frozenset[str]] = {}
        """(HEAD, a memory's commit) -> that commit and its ancestors in HEAD's log."""
        self._grep: dict[tuple[str, str], str | None] = {}
        self._symbols: dict[tuple[str, int, int, str], bool] = {}
        self._targets: dict[str, Path | None] = {}
        self._relative: dict[Path, str] = {}
        self._abs: dict[str, Path] = {}
        self._in_repo: dict[Path, str] = {}
        """Path arithmetic memoised: the warm check is mostly stats."""
        self._git_failed: str | None = None
        """A HEAD for which git failed: that HEAD is checked on the mtime basis."""
        self.git_calls = 0

    # -- the entry point ---------------------------------------------------------------
    def check_many(
        self, memories: Sequence[tuple[list[str], str] | tuple[list[str], str, str | None]]
    ) -> list[Freshness]:
        """Freshness of each (references, updatedAt[, the commit it was made at]); the git history is read
        once for all."""
        parsed = [[r for r in (parse_reference(text, self.root) for text in m[0]) if r] for m in memories]
        times = [_epoch(m[1]) for m in memories]
        made = [m[2] if len(m) > 2 else None for m in memories]
        if not self.enabled:
            return [_overall("off", [_unknown(r, "not checked on this server") for r in refs]) for refs in parsed]
        head = read_head(self.repo) if self.repo is not None else None
        commits: list[Commit] | None = None
        if head is not None and head != self._git_failed and any(parsed):
            wanted = min((t for t, refs in zip(times, parsed, strict=True) if refs), default=0)
            commits = self._commits(head, wanted)
        if commits is not None and head is not None:
            self._locate(head, {r.symbol for refs in parsed for r in refs if r.path is None and r.symbol})
        results = []
        for refs, since, made_at in zip(parsed, times, made, strict=True):
            if commits is None or head is None:
                results.append(_overall("mtime", [self._by_mtime(r, since) for r in refs]))
            else:
                own = self._ancestry(head, commits, made_at) if refs else frozenset()
                results.append(_overall("git", [self._by_git(r, since, head, commits, own) for r in refs]))
        return results

    # -- git basis -----------------------------------------------------------------------
    def _run(self, *args: str) -> bytes | None:
        assert self.repo is not None and self.git is not None
        self.git_calls += 1
        done = run_git(self.git, self.repo.top, *args)
        if done is None or done.returncode not in (0, 1):  # grep answers 1 for "nothing found"
            return None
        return done.stdout

    def _commits(self, head: str, since: int) -> list[Commit] | None:
        with self._lock:
            cached = self._log
            if cached is not None and cached[0] == head and cached[1] <= since:
                return cached[2]
            bound = f"--since={since}" if since > 0 else "--since=1970-01-02"
            out = self._run(
                "log", "-z", "-M", "--name-status", "--no-ext-diff", "--no-textconv", "--no-color",
                f"--max-count={MAX_COMMITS}", bound, "--format=%x1e%H%x1f%ct%x1f%cI%x1f%P%x1f%s", head, "--",
            )  # fmt: skip
            if out is None:
                self._git_failed = head
                return None
            commits = parse_log(out)[::-1]
            self._log = (head, since, commits)
            self._follow = {k: v for k, v in self._follow.items() if k[0] == head}
            self._made_at = {k: v for k, v in self._made_at.items() if k[0] == head}
            self._grep = {k: v for k, v in self._grep.items() if k[0] == head}
            return commits

    def _ancestry(self, head: str, commits: list[Commit], commit: str | None) -> frozenset[str]:
        if not commit:
            return frozenset()
        key = (head, commit)
        found = self._made_at.get(key)
        if found is None:
            found = self._made_at[key] = ancestry(commits, commit)
        return found

    def _history(
        self, head: str, commits: list[Commit], repo_path: str, since: int, folder: bool, made_at: frozenset[str]
    ) -> History:
        key = (head, repo_path, since, folder, made_at)
        found = self._follow.get(key)
        if found is None:
            found = self._follow[key] = follow(commits, repo_path, since, folder, made_at)
        return found

    def _locate(self, head: str, symbols: set[str]) -> None:
        """Find the tracked file (repo-relative) holding every part of each bare symbol, preferring a
        definition: one `git grep` for all of them, cached per HEAD."""
        wanted = sorted(s for s in symbols if (head, s) not in self._grep)
        if not wanted:
            return
        names = sorted({_symbol_parts(s)[-1] for s in wanted})
        patterns = [arg for name in names for arg in ("-e", name)]
        out = self._run("grep", "-z", "-o", "-w", "-F", "--no-color", *patterns, head, "--")
        files: dict[str, set[str]] = {}
        for line in (out or b"").decode(errors="replace").split("\n"):
            name, _, match = line.partition("\0")
            if match:
                files.setdefault(match, set()).add(name.removeprefix(f"{head}:"))
        for symbol in wanted:
            last = _symbol_parts(symbol)[-1]
            holding = [f for f in sorted(files.get(last, ())) if self._holds(self._repo_abs(f), symbol)]
            defining = [f for f in holding if _defines(self._text(self._repo_abs(f)), last)]
            self._grep[(head, symbol)] = (defining or holding)[0] if holding else None

    def _repo_abs(self, repo_path: str) -> Path:
        assert self.repo is not None
        found = self._abs.get(repo_path)
        if found is None:
            found = self._abs[repo_path] = self.repo.top / repo_path
        return found

    def _by_git(
        self, ref: CodeRef, since: int, head: str, commits: list[Commit], made_at: frozenset[str]
    ) -> ReferenceFreshness:
        assert self.repo is not None
        if ref.path is None:  # a bare symbol: find it in the tree
            assert ref.symbol is not None
            repo_path = self._grep.get((head, ref.symbol))
            if repo_path is None:
                return _result(ref, "missing", None, reason="symbol not found in the repository")
            located = CodeRef(ref.text, "symbol", None, ref.symbol)
            history = self._history(head, commits, repo_path, since, False, made_at)
            found = self._repo_abs(repo_path)
            return self._finish(located, self._rel(found), found, history, moved=False)
        target = self._inside(ref.path)
        if target is None:
            return _unknown(ref, "outside the workspace's repository")
        repo_path = self._rel_repo(target)
        history = self._history(head, commits, repo_path, since, ref.kind == "folder", made_at)
        return self._finish(ref, self._rel(target), target, history, moved=history.path != repo_path)

    def _finish(self, ref: CodeRef, path: str, target: Path, history: History, *, moved: bool) -> ReferenceFreshness:
        newest = _commit_info(history.newest)
        commits = history.commits
        now = self._repo_abs(history.path)
        if moved and now.exists():
            state = "moved"
            found = now
        elif target.exists():
            state = "changed" if commits else "current"
            found = target
        else:
            reason = "deleted" if history.deleted is not None else "not found"
            return _result(ref, "missing", path, commits=commits, newest=newest, reason=reason)
        if ref.symbol and found.is_file() and not self._holds(found, ref.symbol):
            return _result(
                ref, "missing", path, commits=commits, newest=newest, reason=f"symbol not found in {self._rel(found)}"
            )
        moved_to = self._rel(now) if state == "moved" else None
        return _result(ref, state, path, commits=commits, newest=newest, moved_to=moved_to)

    def _inside(self, written: str) -> Path | None:
        """The referenced path, normalised, if it lies in the repository (or the workspace without one), and so
        does its real path: a committed link out of it is never looked at (checked on each call, as a checkout
        may make the path a link later)."""
        base = self.repo.top if self.repo is not None else self.root
        if written not in self._targets:
            target = Path(os.path.normpath(self.root / written))
            self._targets[written] = target if target.is_relative_to(base) else None
        found = self._targets[written]
        return found if found is not None and contained(found, base) else None

    def _rel(self, target: Path) -> str:
        found = self._relative.get(target)
        if found is None:
            found = self._relative[target] = Path(os.path.relpath(target, self.root)).as_posix()
        return found

    def _rel_repo(self, target: Path) -> str:
        assert self.repo is not None
        found = self._in_repo.get(target)
        if found is None:
            found = self._in_repo[target] = target.relative_to(self.repo.top).as_posix() or "."
        return found

    # -- mtime basis ---------------------------------------------------------------------
    def _by_mtime(self, ref: CodeRef, since: int) -> ReferenceFreshness:
        if ref.path is None:
            return _unknown(ref, "a bare symbol is looked up only in a git repository")
        target = self._inside(ref.path)
        if target is None:
            return _unknown(ref, "outside the workspace")
        path = self._rel(target)
        try:
            stat = target.stat()
        except OSError:
            return _result(ref, "missing", path, reason="not found")
        modified = stat.st_mtime
        if target.is_dir():
            with os.scandir(target) as entries:
                modified = max([modified, *(e.stat().st_mtime for e in entries if e.is_file(follow_symlinks=False))])
        if ref.symbol and target.is_file() and not self._holds(target, ref.symbol):
            return _result(ref, "missing", path, reason=f"symbol not found in {path}")
        if modified > since:
            when = datetime.fromtimestamp(modified, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            return _result(ref, "changed", path, newest=CommitInfo(id="", date=when, subject=""))
        return _result(ref, "current", path)

    def _holds(self, file: Path, symbol: str) -> bool:
        """Every part of the symbol is a word of the file (cached by size and mtime)."""
        try:
            stat = file.stat()
        except OSError:
            return False
        key = (str(file), stat.st_mtime_ns, stat.st_size, symbol)
        found = self._symbols.get(key)
        if found is None:
            text = self._text(file)
            found = all(
                re.search(rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])", text) for p in _symbol_parts(symbol)
            )
            if len(self._symbols) > MAX_CACHED_FILES:
                self._symbols.clear()
            self._symbols[key] = found
        return found

    def _text(self, file: Path) -> str:
        """The file's first MAX_READ_BYTES as text, if it is a regular file inside the repository; else ""."""
        base = self.repo.top if self.repo is not None else self.root
        data = read_prefix(file, base, MAX_READ_BYTES)
        return data.decode("utf-8", errors="replace") if data else ""


def _symbol_parts(symbol: str) -> list[str]:
    return [p for p in re.split(r"\.|::|#", symbol) if p]


def _defines(text: str, name: str) -> bool:
    return (
        re.search(rf"\b(?:def|class|func|fn|function|interface|struct|type|const|let|var)\s+{re.escape(name)}\b", text)
        is not None
    )


def _epoch(stamp: str) -> int:
    try:
        return int(parse_timestamp(stamp).timestamp())
    except ValueError:
        return 0


def _commit_info(commit: Commit | None) -> CommitInfo | None:
    if commit is None:
        return None
    return CommitInfo.model_construct(id=commit.id[:12], date=commit.date, subject=commit.subject)


def _result(
    ref: CodeRef,
    state: str,
    path: str | None,
    *,
    commits: int | None = None,
    newest: CommitInfo | None = None,
    moved_to: str | None = None,
    reason: str | None = None,
) -> ReferenceFreshness:
    # built from values this module checked: construct skips pydantic's validation (a warm check
    # of 15 memories spent most of its time there)
    return ReferenceFreshness.model_construct(
        reference=ref.text,
        kind=ref.kind,
        path=path,
        symbol=ref.symbol,
        state=state,
        commits=commits,
        newest=newest,
        movedTo=moved_to,
        reason=reason,
    )


def _unknown(ref: CodeRef, reason: str) -> ReferenceFreshness:
    return _result(ref, "unknown", ref.path, reason=reason)


def _overall(basis: str, refs: list[ReferenceFreshness]) -> Freshness:
    """current: every checked reference holds; missing: every one is gone; changed: anything between."""
    checked = [r.state for r in refs if r.state != "unknown"]
    if not refs:
        state = "none"
    elif not checked:
        state = "unknown"
    elif all(s == "missing" for s in checked):
        state = "missing"
    elif all(s == "current" for s in checked):
        state = "current"
    else:
        state = "changed"
    return Freshness.model_construct(state=state, basis=basis, references=refs)


def describe(freshness: Freshness) -> str | None:
    """The markdown line: what became of each reference since the memory was written."""
    if not freshness.references:
        return None
    parts = []
    for ref in freshness.references:
        name = f"`{ref.reference.strip()}`"
        newest = ref.newest
        since = ""
        if newest is not None and newest.id:
            since = f" (newest {newest.id[:7]}, {newest.date[:10]}, '{newest.subject}')"
        if ref.state == "current":
            parts.append(f"{name} current")
        elif ref.state == "changed" and ref.commits is None:
            parts.append(f"{name} modified since ({newest.date[:10] if newest else 'date unknown'})")
        elif ref.state == "changed":
            parts.append(f"{name} changed in {ref.commits} commit{'s' if ref.commits != 1 else ''} since{since}")
        elif ref.state == "moved":
            parts.append(f"{name} moved to `{ref.movedTo}`{since}")
        elif ref.state == "missing":
            parts.append(f"{name} missing ({ref.reason}{', ' + since.strip(' ()') if since else ''})")
        else:
            parts.append(f"{name} unknown ({ref.reason})")
    return "**References:** " + "; ".join(parts)
