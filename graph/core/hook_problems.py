"""The client hooks' recent problems, for people: `flowbaby status` and the VS Code status bar (health).

flowbaby/hook.py records each time a hook injected nothing because something was wrong (no owner
answered, the owner failed, the hook itself failed; never when nothing matched) in
`.flowbaby/hooks/problems.json`: `{"problems": [{at, event, client, reason}...] (the last 20),
"okAt": when the owner last answered a hook after a problem}`. A problem is current while the
owner has answered no hook since. The file may have come with a cloned repository, so it counts
only as a regular file of this user's, read without following a link, and its text is shown
stripped of control characters.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

PROBLEMS_FILE = "hooks/problems.json"
"""Relative to the workspace's data folder (.flowbaby/)."""
SHOWN = 5
MAX_FILE_BYTES = 256 * 1024


def _clean(value: Any, limit: int) -> str:
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return text[:limit]


def _read(data: Path) -> dict[str, Any]:
    folder_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(data, folder_flags)
        try:
            folder = os.open("hooks", folder_flags, dir_fd=top)
        finally:
            os.close(top)
        try:
            fd = os.open("problems.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                return {}
            value = json.loads(handle.read(MAX_FILE_BYTES))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def hook_problems(data: Path) -> dict[str, Any]:
    """`{"current": bool, "problems": [...]}`: the last SHOWN problems, newest last; `current` when no
    hook answered after the newest."""
    record = _read(data)
    rows = [row for row in record.get("problems") or [] if isinstance(row, dict)][-SHOWN:]
    problems = [
        {
            "at": _clean(row.get("at", ""), 40),
            "event": _clean(row.get("event", ""), 40),
            "client": _clean(row.get("client", ""), 40),
            "reason": _clean(row.get("reason", ""), 500),
        }
        for row in rows
    ]
    answered = _clean(record.get("okAt") or "", 40)
    current = bool(problems) and answered < problems[-1]["at"]
    return {"current": current, "problems": problems}


def problems_text(summary: dict[str, Any]) -> str:
    """Lines for `flowbaby status`; empty when no hook problem was recorded."""
    if not summary["problems"]:
        return ""
    state = "current: the hooks inject nothing" if summary["current"] else "hooks have answered since"
    lines = [f"hook problems ({state}):"]
    lines += [f"  {row['at']} {row['event']} ({row['client']}): {row['reason']}" for row in summary["problems"]]
    return "\n".join(lines)
