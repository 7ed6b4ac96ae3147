"""`flowbaby install` / `uninstall`: the MCP server entry in each agent client's own config file,
plus the agent-side files (the `flowbaby-memory` skill, the Copilot custom agent).

Merging keeps every other server and setting (Codex CLI's config.toml: flowbaby/codex_config.py),
is idempotent, and names the workspace by absolute path: clients may start MCP servers from the
home directory, so nothing relies on the cwd. A file with comments (JSONC) is read, but rewriting
it would drop them: if it needs a change, the command stops and prints the entry to paste instead.

A cloned repository decides what lies in the workspace, symlinks included: a config or agent file
that is a symlink, or that sits under a symlinked folder inside the workspace, is refused (never
read or written through), and a change is staged in a temp file created exclusively (a fresh name,
O_EXCL, 0600) next to its target, then renamed over it with the target's own mode kept.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flowbaby.agent_files import COPILOT_AGENT, MARKER, SKILL
from flowbaby.codex_config import TomlError, merged_toml
from flowbaby.hook_install import merged_settings, opencode_plugin, opencode_plugin_file
from flowbaby.next_steps import ALLOW_RULE, claude_settings_file, next_steps, with_allow_rule
from graph.core.environment import Environment

Client = Literal["claude-code", "opencode", "codex", "gemini", "copilot", "cursor", "vscode"]
Scope = Literal["project", "user"]
CLIENTS: tuple[Client, ...] = ("claude-code", "opencode", "codex", "gemini", "copilot", "cursor", "vscode")
CODEX_STARTUP_SEC = 30
"""Codex CLI's wait for the server's start (its default, 10 s, can be short for a cold first start)."""
SERVER_NAME = "flowbaby"


class InstallError(Exception):
    """A change the command will not make on its own; the message says what to do."""


@dataclass(frozen=True)
class Change:
    path: Path
    before: str | None
    after: str | None  # None: delete the file
    mode: int | None = None
    """The existing file's permission bits, kept on rewrite (a 0600 ~/.claude.json stays 0600)."""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(lines)


def server_command(workspace: Path) -> list[str]:
    """The command line that starts this installation's `flowbaby mcp` on `workspace`."""
    script = Path(sys.executable).parent / "flowbaby"
    # -P: agent clients start it in the project, which must not come first on sys.path
    fallback = [sys.executable, "-P", "-c", "from flowbaby.cli import main; main()"]
    launcher = [str(script)] if script.is_file() else fallback
    return [*launcher, "mcp", "--workspace", str(workspace)]


def server_entry(client: Client, command: list[str]) -> dict[str, Any]:
    """The entry in the client's own shape."""
    if client == "opencode":
        return {"type": "local", "command": command, "enabled": True}
    if client in ("cursor", "gemini"):
        return {"command": command[0], "args": command[1:]}
    if client == "codex":
        return {"command": command[0], "args": command[1:], "startup_timeout_sec": CODEX_STARTUP_SEC}
    if client == "copilot":
        return {"type": "local", "command": command[0], "args": command[1:], "tools": ["*"]}
    return {"type": "stdio", "command": command[0], "args": command[1:]}


def _config_home(home: Path) -> Path:
    return Path(Environment.read().get("XDG_CONFIG_HOME") or home / ".config")


def _claude_home(home: Path) -> Path:
    return Environment.read().claude_home(home)


def _codex_dir(scope: Scope, workspace: Path, home: Path) -> Path:
    """The project's `.codex/` or CODEX_HOME (default ~/.codex): config.toml and hooks.json."""
    return workspace / ".codex" if scope == "project" else Environment.read().codex_home(home)


def config_file(client: Client, scope: Scope, workspace: Path, home: Path) -> tuple[Path, str]:
    """(file, key of the servers object) for a client and scope."""
    if client == "claude-code":
        if scope == "project":
            return workspace / ".mcp.json", "mcpServers"
        claude_dir = Environment.read().claude_config_dir
        return (Path(claude_dir) if claude_dir else home) / ".claude.json", "mcpServers"
    if client == "opencode":
        base = workspace if scope == "project" else _config_home(home) / "opencode"
        return base / "opencode.json", "mcp"
    if client == "cursor":
        return (workspace if scope == "project" else home) / ".cursor" / "mcp.json", "mcpServers"
    if client == "codex":
        return _codex_dir(scope, workspace, home) / "config.toml", "mcp_servers"
    if client == "gemini":
        return (workspace if scope == "project" else home) / ".gemini" / "settings.json", "mcpServers"
    if client == "copilot":
        if scope == "project":
            raise InstallError("Copilot CLI reads its MCP servers from ~/.copilot/mcp-config.json: pass --scope user")
        return Environment.read().copilot_home(home) / "mcp-config.json", "mcpServers"
    if scope == "project":
        return workspace / ".vscode" / "mcp.json", "servers"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json", "servers"
    return _config_home(home) / "Code" / "User" / "mcp.json", "servers"


def agent_files(client: Client, scope: Scope, workspace: Path, home: Path) -> dict[Path, str]:
    """The skill or custom agent for a client (none for Cursor, none for VS Code's user scope)."""
    skill = Path("skills") / "flowbaby-memory" / "SKILL.md"
    if client == "claude-code":
        return {(workspace / ".claude" if scope == "project" else _claude_home(home)) / skill: SKILL}
    if client == "opencode":
        return {(workspace / ".opencode" if scope == "project" else _config_home(home) / "opencode") / skill: SKILL}
    if client == "vscode" and scope == "project":
        return {workspace / ".github" / "agents" / "memory-aware.agent.md": COPILOT_AGENT}
    return {}


_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (as VS Code and OpenCode accept) to plain JSON."""
    plain = _JSONC_TOKENS.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return re.sub(r",(\s*[}\]])", r"\1", plain)


def _load(path: Path, text: str | None) -> tuple[dict[str, Any], bool]:
    """(the config, whether the file carries comments or trailing commas)."""
    if text is None or not text.strip():
        return {}, False
    try:
        data, commented = json.loads(text), False
    except json.JSONDecodeError:
        try:
            data, commented = json.loads(_strip_jsonc(text)), True
        except json.JSONDecodeError as exc:
            raise InstallError(f"{path} is not valid JSON ({exc}); fix it, then run the command again") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object")
    return data, commented


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def merged_config(path: Path, text: str | None, key: str, entry: dict[str, Any] | None) -> str | None:
    """The file's new text with our entry set (or removed, entry=None); every other key kept."""
    data, commented = _load(path, text)
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "{key}" is not an object')
    if servers.get(SERVER_NAME) == entry or (entry is None and SERVER_NAME not in servers):
        return text
    if commented:
        todo = (
            f"add or replace this by hand:\n{json.dumps({key: {SERVER_NAME: entry}}, indent=2)}"
            if entry is not None
            else f'remove the "{SERVER_NAME}" entry under "{key}" by hand'
        )
        raise InstallError(f"{path} has comments, which rewriting would drop; {todo}")
    servers = dict(servers)
    if entry is None:
        servers.pop(SERVER_NAME)
    else:
        servers[SERVER_NAME] = entry
    return _dump({**data, key: servers})


def _refuse_links(path: Path, workspace: Path) -> None:
    """A symlinked file, or a symlinked folder between the workspace and the file, is refused:
    a repository could link `.mcp.json` (or `.claude/`) to a private file (or folder) elsewhere."""
    inside = path.is_relative_to(workspace)
    for node in [path, *(path.parents if inside else [])]:
        if inside and node == workspace:
            break
        if node.is_symlink():
            raise InstallError(
                f"{node} is a symlink; flowbaby install never reads or writes through one. "
                "Replace it with a regular file or folder, or edit the config by hand"
            )


def _read(path: Path, workspace: Path) -> tuple[str | None, int | None]:
    """(text, permission bits) of a regular file, (None, None) if there is none; never follows a link."""
    _refuse_links(path, workspace)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise InstallError(f"{path} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InstallError(f"{path} is not a regular file")
        try:
            return handle.read().decode("utf-8"), stat.S_IMODE(info.st_mode)
        except UnicodeDecodeError:
            raise InstallError(f"{path} is not UTF-8 text") from None


def _allow_rules(path: Path, workspace: Path) -> list[str]:
    """Claude Code's permissions.allow in `path` as it is now (an unreadable file: none)."""
    try:
        text, _ = _read(path, workspace)
        data, _ = _load(path, text)
    except InstallError:
        return []
    permissions = data.get("permissions")
    rules = permissions.get("allow") if isinstance(permissions, dict) else None
    return [rule for rule in rules if isinstance(rule, str)] if isinstance(rules, list) else []


def plan(
    client: Client,
    scope: Scope,
    workspace: Path,
    *,
    home: Path,
    remove: bool = False,
    force: bool = False,
    allow_tools: bool = False,
    hooks: bool = True,
) -> list[Change]:
    """Every file change for an install (or an uninstall), without touching the disk.
    `allow_tools` (Claude Code, the user's consent): allow every flowbaby tool in its settings.
    hooks=False leaves the client hooks out (and takes flowbaby's out if they were there).
    An uninstall takes both out again."""
    if not workspace.is_absolute():
        raise InstallError(f"the workspace must be an absolute path, got {workspace}")
    if workspace == home.resolve() and not force:
        raise InstallError(
            f"{workspace} is your home directory: memories would mix every project. "
            "Run this inside a project, pass --workspace, or pass --force to use it anyway"
        )
    path, key = config_file(client, scope, workspace, home)
    before, mode = _read(path, workspace)
    entry = None if remove else server_entry(client, server_command(workspace))
    try:
        after = merged_toml(path, before, SERVER_NAME, entry) if client == "codex" else None
    except TomlError as exc:
        raise InstallError(str(exc)) from None
    changes = [Change(path, before, after if client == "codex" else merged_config(path, before, key, entry), mode)]
    for file, content in agent_files(client, scope, workspace, home).items():
        current, mode = _read(file, workspace)
        ours = current is None or MARKER in current
        if remove:
            changes.append(Change(file, current, None if ours else current, mode))
        elif not ours and not force:
            raise InstallError(f"{file} exists and was not written by flowbaby; pass --force to replace it")
        else:
            changes.append(Change(file, current, content, mode))
    for change in hook_changes(
        client,
        scope,
        workspace,
        home,
        remove=remove or not hooks,
        force=force,
        allow=False if remove else (True if allow_tools else None),
        pending={c.path: c for c in changes},
    ):
        # Gemini CLI keeps servers and hooks in one settings.json: the hook change, made on top of the
        # server's, replaces it
        changes = [c for c in changes if c.path != change.path] + [change]
    return changes


def hook_changes(
    client: Client,
    scope: Scope,
    workspace: Path,
    home: Path,
    *,
    remove: bool,
    force: bool,
    allow: bool | None = None,
    pending: dict[Path, Change] | None = None,
) -> list[Change]:
    """The hook file changes for an install (remove=True: take ours out; the user's own stay):
    flowbaby/hook_install.py says what they hold. Claude Code's settings file gets one change, which
    also adds the allow rule (allow=True, the user's consent) or takes it out (False; None: as it is).
    `pending`: changes already planned, by file; a hook file among them is merged on top of its change."""
    settings = {
        "claude-code": lambda: claude_settings_file(scope, workspace, _claude_home(home)),
        "codex": lambda: _codex_dir(scope, workspace, home) / "hooks.json",
        "gemini": lambda: config_file("gemini", scope, workspace, home)[0],
    }
    if client in settings:
        path = settings[client]()
        before, mode = _read(path, workspace)
        planned = (pending or {}).get(path)
        data, commented = _load(path, planned.after if planned else before)
        try:
            merged = merged_settings(data, None if remove else workspace, client)
            if allow is not None and client == "claude-code":
                merged = with_allow_rule(merged, allow)
        except ValueError as exc:
            raise InstallError(f"{path}: {exc}") from None
        if merged == data:
            return [planned] if planned else [Change(path, before, before, mode)]
        if commented:
            raise InstallError(f"{path} has comments, which rewriting would drop; add by hand:\n{_dump(merged)}")
        after = _dump(merged) if merged else None  # a settings file left empty by the uninstall goes
        return [Change(path, before, after, mode)]
    if client == "opencode":
        path = opencode_plugin_file(scope, workspace, _config_home(home) / "opencode")
        current, mode = _read(path, workspace)
        ours = current is None or MARKER in current
        if remove:
            return [Change(path, current, None if ours and current is not None else current, mode)]
        if not ours and not force:
            raise InstallError(f"{path} exists and was not written by flowbaby; pass --force to replace it")
        return [Change(path, current, opencode_plugin(workspace), mode)]
    return []


def apply(changes: list[Change]) -> None:
    for change in changes:
        if not change.changed:
            continue
        if change.after is None:
            change.path.unlink()
            with contextlib.suppress(OSError):  # the skill's own folder, once empty
                change.path.parent.rmdir()
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        _write(change.path, change.after, change.mode)


def _write(path: Path, text: str, mode: int | None) -> None:
    """Replace `path` atomically (never a half-written config) through a temp file that mkstemp
    creates exclusively in the same folder, so no file or link already there is written through."""
    from graph.api import write_atomic  # the engine only when a file is written (--help stays fast)

    write_atomic(path, text, mode=mode)  # mode None (a new file): what the umask gives any file the user creates


def run(
    client: Client,
    scope: Scope,
    workspace: str | None,
    *,
    dry_run: bool,
    force: bool,
    remove: bool = False,
    allow_tools: bool = False,
    hooks: bool = True,
) -> int:
    home = Path.home()
    root = Path(workspace or os.getcwd()).expanduser().resolve()
    verb = "uninstall" if remove else "install"
    try:
        if not root.is_dir():
            raise InstallError(f"workspace {root} is not a directory")
        if allow_tools and client != "claude-code":
            raise InstallError("--allow-tools is for claude-code only")
        changes = plan(client, scope, root, home=home, remove=remove, force=force, allow_tools=allow_tools, hooks=hooks)
    except InstallError as error:
        print(f"flowbaby {verb}: {error}", file=sys.stderr)
        return 2
    for change in changes:
        if not change.changed:
            print(f"unchanged {change.path}")
        elif dry_run:
            print(change.diff(), end="")
        else:
            print(f"{'removed' if change.after is None else 'wrote'} {change.path}")
    if not dry_run:
        apply(changes)
    if not dry_run and not remove:
        _keep_data_out_of_git(root)
    if not remove:
        settings = claude_settings_file(scope, root, _claude_home(home))
        allowed = client == "claude-code" and ALLOW_RULE in _allow_rules(settings, root)
        print("\n" + next_steps(client, scope, root, settings, allowed))
    return 0


def _keep_data_out_of_git(root: Path) -> None:
    """Create the workspace's .flowbaby/ now, with the .gitignore that keeps it out of git, so the
    first `git add -A` after install cannot take the token, memories or transcripts; then say what
    git itself answers for those files (`git check-ignore`), never what the file was meant to do."""
    from graph.api import data_files_git_takes, resolve_workspace
    from graph.core.contract import FlowbabyError

    try:
        paths = resolve_workspace(root)
    except FlowbabyError as error:  # the client config is written; the first start tries again
        print(f"flowbaby install: {error.message}", file=sys.stderr)
        return
    report = data_files_git_takes(paths)
    if not report.repository:
        print(f"not in a git work tree: {paths.data}/ (its {paths.git_ignore.name} keeps it out of one made later)")
    elif not report.taken:
        print(f"ignored by git: {paths.data}/ (git check-ignore: all {report.checked} of its data files)")
    else:
        print(f"flowbaby install: git would commit {len(report.taken)} of flowbaby's data files:", file=sys.stderr)
        for name in report.taken:
            print(f"  NOT ignored by git: {name}", file=sys.stderr)
        print("  tracked, or git could not tell: `git rm --cached -r .flowbaby` untracks them", file=sys.stderr)
