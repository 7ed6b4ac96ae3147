"""`flowbaby install` / `uninstall`: the MCP server entry in each agent client's own config file,
plus the agent-side files (the `flowbaby-memory` skill, the Copilot custom agent).

Merging keeps every other server and setting, is idempotent, and names the workspace by absolute
path: clients may start MCP servers from the home directory, so nothing relies on the cwd. A file
with comments (JSONC) is read, but rewriting it would drop them: if it needs a change, the command
stops and prints the entry to paste instead.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bridge.agent_files import COPILOT_AGENT, MARKER, SKILL

Client = Literal["claude-code", "opencode", "cursor", "vscode"]
Scope = Literal["project", "user"]
CLIENTS: tuple[Client, ...] = ("claude-code", "opencode", "cursor", "vscode")
SERVER_NAME = "flowbaby"


class InstallError(Exception):
    """A change the command will not make on its own; the message says what to do."""


@dataclass(frozen=True)
class Change:
    path: Path
    before: str | None
    after: str | None  # None: delete the file

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
    launcher = [str(script)] if script.is_file() else [sys.executable, "-c", "from bridge.cli import main; main()"]
    return [*launcher, "mcp", "--workspace", str(workspace)]


def server_entry(client: Client, command: list[str]) -> dict[str, Any]:
    """The entry in the client's own shape."""
    if client == "opencode":
        return {"type": "local", "command": command, "enabled": True}
    if client == "cursor":
        return {"command": command[0], "args": command[1:]}
    return {"type": "stdio", "command": command[0], "args": command[1:]}


def _config_home(home: Path) -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def _claude_home(home: Path) -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")


def config_file(client: Client, scope: Scope, workspace: Path, home: Path) -> tuple[Path, str]:
    """(file, key of the servers object) for a client and scope."""
    if client == "claude-code":
        if scope == "project":
            return workspace / ".mcp.json", "mcpServers"
        claude_dir = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(claude_dir) if claude_dir else home) / ".claude.json", "mcpServers"
    if client == "opencode":
        base = workspace if scope == "project" else _config_home(home) / "opencode"
        return base / "opencode.json", "mcp"
    if client == "cursor":
        return (workspace if scope == "project" else home) / ".cursor" / "mcp.json", "mcpServers"
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


def plan(
    client: Client, scope: Scope, workspace: Path, *, home: Path, remove: bool = False, force: bool = False
) -> list[Change]:
    """Every file change for an install (or an uninstall), without touching the disk."""
    if not workspace.is_absolute():
        raise InstallError(f"the workspace must be an absolute path, got {workspace}")
    if workspace == home.resolve() and not force:
        raise InstallError(
            f"{workspace} is your home directory: memories would mix every project. "
            "Run this inside a project, pass --workspace, or pass --force to use it anyway"
        )
    path, key = config_file(client, scope, workspace, home)
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    entry = None if remove else server_entry(client, server_command(workspace))
    changes = [Change(path, before, merged_config(path, before, key, entry))]
    for file, content in agent_files(client, scope, workspace, home).items():
        current = file.read_text(encoding="utf-8") if file.is_file() else None
        ours = current is None or MARKER in current
        if remove:
            changes.append(Change(file, current, None if ours else current))
        elif not ours and not force:
            raise InstallError(f"{file} exists and was not written by flowbaby; pass --force to replace it")
        else:
            changes.append(Change(file, current, content))
    return changes


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
        staging = change.path.with_name(change.path.name + ".flowbaby-tmp")
        staging.write_text(change.after, encoding="utf-8")
        os.replace(staging, change.path)  # never a half-written config


def run(
    client: Client, scope: Scope, workspace: str | None, *, dry_run: bool, force: bool, remove: bool = False
) -> int:
    home = Path.home()
    root = Path(workspace or os.getcwd()).expanduser().resolve()
    verb = "uninstall" if remove else "install"
    try:
        if not root.is_dir():
            raise InstallError(f"workspace {root} is not a directory")
        changes = plan(client, scope, root, home=home, remove=remove, force=force)
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
    return 0


def _keep_data_out_of_git(root: Path) -> None:
    """Create the workspace's .flowbaby/ now, with the .gitignore that keeps it out of git, so the
    first `git add -A` after install cannot take the token, memories or transcripts."""
    from graph.core.contract import FlowbabyError
    from graph.service import resolve_workspace

    try:
        paths = resolve_workspace(root)
    except FlowbabyError as error:  # the client config is written; the first start tries again
        print(f"flowbaby install: {error.message}", file=sys.stderr)
        return
    print(f"ignored by git: {paths.data}/ (through {paths.git_ignore.name} inside it)")
