"""The client hooks' recent problems, for people: `flowbaby status` and the VS Code status bar (health).

flowbaby/hook.py records each time a hook injected nothing because something was wrong (no owner
answered, the owner failed, the hook itself failed; never when nothing matched) as
`{"problems": [{at, event, client, reason}...] (the last 20), "okAt": when the owner last answered a
hook after a problem}`. A problem is current while the owner has answered no hook since. The record
is kept where no repository can write, in the user's state folder keyed by the workspace's real path
(problems_path): a `.flowbaby/hooks/problems.json` that came with a clone is never read. It counts
only as a private regular file of this user, read without following a link; a date after now (a
planted or skewed clock's) is dropped; its text is shown stripped of control characters.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from graph.core.environment import Environment

PROBLEMS_FOLDER = ("flowbaby", "hook-problems")
"""Under the user's state folder ($XDG_STATE_HOME, default ~/.local/state); flowbaby/hook.py writes there."""
SHOWN = 5
MAX_FILE_BYTES = 256 * 1024
CLOCK_SKEW_SEC = 300
"""A recorded date later than now by more than this is not a date a hook of this machine wrote."""


def problems_name(root: str) -> str:
    """The record's file name for the workspace at real path `root` (flowbaby/hook.py makes the same)."""
    return f"{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}.json"


def problems_path(root: Path) -> Path:
    """Where the hooks keep the problems of the workspace whose real path is `root`."""
    return Environment.read().state_home.joinpath(*PROBLEMS_FOLDER, problems_name(str(root)))


def _clean(value: Any, limit: int) -> str:
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return text[:limit]


def _read(path: Path) -> dict[str, Any]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                return {}
            value = json.loads(handle.read(MAX_FILE_BYTES))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def hook_problems(root: Path) -> dict[str, Any]:
    """`{"current": bool, "problems": [...]}` for the workspace at real path `root`: the last SHOWN
    problems, newest last; `current` when no hook answered after the newest."""
    record = _read(problems_path(root))
    latest = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + CLOCK_SKEW_SEC))
    rows = [row for row in record.get("problems") or [] if isinstance(row, dict) and str(row.get("at")) <= latest]
    rows = rows[-SHOWN:]
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
    answered = answered if answered <= latest else ""
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
