"""What `flowbaby install` leaves to the user, per client, and the one permission it may add for them.

Claude Code asks before every MCP tool call until a `permissions.allow` rule names the tool; the
rule `mcp__flowbaby__*` (every flowbaby tool) is written only with `--allow-tools`, the user's
consent. Claude Code 2.1.332 ignores a project's `.claude/settings.json` permissions until the
folder is trusted (measured), which the next steps say.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

ALLOW_RULE = "mcp__flowbaby__*"
"""Claude Code's permission rule for every tool of the `flowbaby` server."""


def claude_settings_file(scope: str, workspace: Path, claude_home: Path) -> Path:
    return (workspace / ".claude" if scope == "project" else claude_home) / "settings.json"


def with_allow_rule(data: dict[str, Any], allow: bool) -> dict[str, Any]:
    """`data` with ALLOW_RULE added to (allow) or removed from permissions.allow; the rest kept."""
    permissions = data.get("permissions", {})
    rules = permissions.get("allow", []) if isinstance(permissions, dict) else None
    if not isinstance(rules, list):
        raise ValueError('"permissions.allow" is not a list')
    if allow == (ALLOW_RULE in rules):
        return data
    rules = [*rules, ALLOW_RULE] if allow else [rule for rule in rules if rule != ALLOW_RULE]
    return {**data, "permissions": {**permissions, "allow": rules}}


def next_steps(client: str, scope: str, workspace: Path, settings: Path, allowed: bool) -> str:
    """The text printed after an install. `settings`: Claude Code's settings file for the scope;
    `allowed`: whether it now holds ALLOW_RULE."""
    if client == "claude-code":
        if scope == "project":
            approve = (
                f"  1. Start `claude` in {workspace}, trust the folder, and approve the project MCP server\n"
                '     "flowbaby" when asked (until then `claude mcp list` shows it "Pending approval").\n'
            )
        else:
            approve = (
                "  1. Start `claude`: a user-scope server needs no approval (`claude mcp list` health-checks it).\n"
            )
        if allowed:
            allow = (
                f'  2. The flowbaby tools are allowed without a prompt: "{ALLOW_RULE}" is in permissions.allow\n'
                f"     of {settings}"
                + (
                    " (Claude Code applies a project's rules once the folder is trusted)."
                    if scope == "project"
                    else "."
                )
            )
        else:
            allow = (
                "  2. Claude Code asks before each flowbaby tool call (in `claude -p` it refuses it). To allow them,\n"
                f'     add "{ALLOW_RULE}" to permissions.allow in {settings}\n'
                "     or run this command again with --allow-tools."
            )
        return "Next steps for Claude Code:\n" + approve + allow
    if client == "opencode":
        return (
            "Next steps for OpenCode:\n"
            f"  Start `opencode` in {workspace}: it starts the flowbaby server itself, and runs its tools without\n"
            '  asking unless your opencode.json\'s "permission" settings say otherwise.'
        )
    if client == "codex":
        trust = (
            f"  Codex reads {workspace}/.codex/ only once the project is trusted (it asks on the first start).\n"
            if scope == "project"
            else ""
        )
        return (
            "Next steps for Codex CLI:\n"
            + trust
            + "  `codex mcp list` shows the flowbaby server. Codex runs new or changed hooks only after you trust\n"
            "  them: start `codex`, type /hooks and trust the flowbaby hooks (until then `codex exec` skips them\n"
            "  silently; `codex exec --dangerously-bypass-hook-trust` runs them for one invocation)."
        )
    if client == "gemini":
        return (
            "Next steps for Gemini CLI:\n"
            + (
                f"  Gemini reads {workspace}/.gemini/settings.json only in a trusted folder: start `gemini` there\n"
                "  and trust it (headless runs: GEMINI_CLI_TRUST_WORKSPACE=true). "
                if scope == "project"
                else "  "
            )
            + "`gemini mcp list` shows the flowbaby server;\n"
            "  it asks before each flowbaby tool call unless you allow it (or the server is trusted)."
        )
    if client == "copilot":
        return (
            "Next steps for GitHub Copilot CLI:\n"
            "  Start `copilot`: /mcp shows the flowbaby server. It asks before each tool call unless allowed."
        )
    if client == "cursor":
        return (
            "Next steps for Cursor:\n"
            "  Open Cursor Settings > MCP and check that the flowbaby server is enabled. In agent chat Cursor\n"
            "  asks before each tool call unless you allow the flowbaby tools to run automatically."
        )
    where = f"{workspace}/.vscode/mcp.json" if scope == "project" else "your user mcp.json"
    return (
        "Next steps for VS Code:\n"
        f"  Open {where} and start the flowbaby server (the Start link above it, or the command\n"
        '  "MCP: List Servers"), trusting it when asked. In Copilot Chat\'s agent mode VS Code asks you to\n'
        '  confirm each flowbaby tool call; "Always Allow" stops the questions.'
    )


def flowbaby_command() -> str:
    """How the user can run flowbaby from a shell, for printed hints: `flowbaby` when the one on PATH is
    this one (`make install`), else this process's own launcher by absolute path."""
    me = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    found = shutil.which("flowbaby")
    if found and os.path.realpath(found) == me:
        return "flowbaby"
    if os.path.basename(me) == "flowbaby":
        return me
    return f"{sys.executable} -m flowbaby"
