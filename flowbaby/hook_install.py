"""The hooks `flowbaby install` adds next to the MCP server: Claude Code's `hooks` in its
settings.json, Codex CLI's hooks.json and Gemini CLI's `hooks` in its settings.json (all three the
same shape: event -> groups -> command handlers; merged with the user's own hooks, idempotent,
only ours removed on uninstall), and OpenCode's plugin file. All run `flowbaby/hook.py` (see its
docstring) with the client's name."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from flowbaby import hook
from flowbaby.agent_files import MARKER

CLAUDE_EVENTS = {"SessionStart": 30, "UserPromptSubmit": 30, "Stop": 15, "PreCompact": 15, "SessionEnd": 15}
"""Each Claude Code hook event flowbaby handles, with the client's own timeout for it in seconds
(a backstop: the hook itself answers within FLOWBABY_HOOK_TIMEOUT_SEC, or FLOWBABY_HOOK_START_SEC (20 s)
when it had to start the workspace's service). Codex CLI 0.169.0 gets the same: its events have these
names, stdin and stdout (measured)."""
GEMINI_EVENTS = {
    "SessionStart": ("SessionStart", 30000),
    "BeforeAgent": ("UserPromptSubmit", 30000),
    "AfterAgent": ("Stop", 15000),
    "PreCompress": ("PreCompact", 15000),
    "SessionEnd": ("SessionEnd", 15000),
}
"""Gemini CLI 0.61.0's event -> (flowbaby's hook event, the client's timeout in milliseconds)."""
PLUGIN_DEADLINE_MS = {"SessionStart": 30000, "UserPromptSubmit": 30000}
"""The OpenCode plugin's deadline per event, as CLAUDE_EVENTS (5 s for the captures)."""


def hook_command(event: str, workspace: Path, client: str) -> str:
    """`python -S <flowbaby>/hook.py <event> ...`: the hook module needs only the standard library,
    so it starts without site-packages (about 20 ms, where `flowbaby hook` loads the whole venv)."""
    parts = [sys.executable, "-S", str(Path(hook.__file__).resolve()), event, "--workspace", str(workspace)]
    return shlex.join([*parts, "--client", client])


def is_ours(command: Any) -> bool:
    try:
        words = shlex.split(command) if isinstance(command, str) else []
    except ValueError:
        return False
    named = any(Path(word).name == "hook.py" and Path(word).parent.name == "flowbaby" for word in words)
    return (named or "hook" in words) and "--workspace" in words and any(w in hook.EVENTS for w in words)


def claude_settings_file(scope: str, workspace: Path, claude_home: Path) -> Path:
    return (workspace / ".claude" if scope == "project" else claude_home) / "settings.json"


def client_events(client: str) -> dict[str, tuple[str, int]]:
    """The client's hook event -> (flowbaby's event, the client's timeout) that install writes."""
    if client == "gemini":
        return GEMINI_EVENTS
    return {event: (event, timeout) for event, timeout in CLAUDE_EVENTS.items()}


def merged_settings(data: dict[str, Any], workspace: Path | None, client: str = "claude-code") -> dict[str, Any]:
    """A client's hook settings (Claude Code's or Gemini CLI's settings.json, Codex CLI's hooks.json) with
    flowbaby's hooks (workspace=None: without them); the user's own kept."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError('"hooks" is not an object')
    result: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            result[event] = groups
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                mine = [h for h in inner if isinstance(h, dict) and is_ours(h.get("command"))]
                if mine:
                    rest = [h for h in inner if h not in mine]
                    if not rest:
                        continue
                    group = {**group, "hooks": rest}
            kept.append(group)
        if kept:
            result[event] = kept
    if workspace is not None:
        for event, (ours, timeout) in client_events(client).items():
            entry = {"type": "command", "command": hook_command(ours, workspace, client), "timeout": timeout}
            result[event] = [*result.get(event, []), {"hooks": [entry]}]
    merged = {k: v for k, v in data.items() if k != "hooks"}
    if result:
        merged["hooks"] = result
    return merged


def opencode_plugin_file(scope: str, workspace: Path, opencode_home: Path) -> Path:
    return (workspace / ".opencode" if scope == "project" else opencode_home) / "plugin" / "flowbaby.js"


def opencode_plugin(workspace: Path) -> str:
    """The plugin: briefing once per session and recall per prompt, pushed into the system prompt;
    capture at idle and compaction. Every call is `hook.py` with a deadline; failures add nothing."""
    command = [sys.executable, "-S", str(Path(hook.__file__).resolve())]
    return f"""// {MARKER}
// Flowbaby memory for OpenCode: see INGEST_CONTRACT.md, "Client hooks".
import {{ spawn }} from "node:child_process";

const COMMAND = {json.dumps(command)};
const WORKSPACE = {json.dumps(str(workspace))};
const DEADLINE_MS = {json.dumps(PLUGIN_DEADLINE_MS)};

function run(event, payload) {{
  return new Promise((resolve) => {{
    let out = "";
    let child;
    try {{
      child = spawn(COMMAND[0], [...COMMAND.slice(1), event, "--workspace", WORKSPACE, "--client", "opencode"],
        {{ stdio: ["pipe", "pipe", "ignore"] }});
    }} catch (e) {{
      resolve("");
      return;
    }}
    const deadline = DEADLINE_MS[event] || 5000;
    const timer = setTimeout(() => {{ try {{ child.kill(); }} catch (e) {{}} resolve(""); }}, deadline);
    child.stdout.on("data", (chunk) => {{ out += chunk; }});
    child.on("error", () => {{ clearTimeout(timer); resolve(""); }});
    child.on("close", () => {{ clearTimeout(timer); resolve(out.trim()); }});
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify({{ cwd: WORKSPACE, hook_event_name: event, ...payload }}));
  }});
}}

export const FlowbabyMemory = async () => {{
  const briefed = new Map();  // sessionID -> briefing text
  const recalled = new Map(); // sessionID -> this prompt's recall text
  let last = "";
  return {{
    "chat.message": async (input, output) => {{
      const sid = input.sessionID || (output.message && output.message.sessionID) || "";
      last = sid;
      const prompt = (output.parts || []).filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text).join("\\n");
      if (!briefed.has(sid)) briefed.set(sid, await run("SessionStart", {{ session_id: sid, source: "startup" }}));
      recalled.set(sid, prompt ? await run("UserPromptSubmit", {{ session_id: sid, prompt }}) : "");
    }},
    "experimental.chat.system.transform": async (input, output) => {{
      const sid = (input && input.sessionID) || last;
      for (const text of [briefed.get(sid), recalled.get(sid)]) if (text) output.system.push(text);
    }},
    event: async ({{ event }}) => {{
      const props = event.properties || {{}};
      const sid = props.sessionID || (props.info && props.info.id) || "";
      if (!sid) return;
      if (event.type === "session.idle") await run("Stop", {{ session_id: sid }});
      else if (event.type === "session.compacted") await run("PreCompact", {{ session_id: sid }});
    }},
  }};
}};
"""
