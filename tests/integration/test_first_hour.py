"""What a new user meets in their own project (issue 27): `.flowbaby/` stays out of git, short agent
sessions still get their graph (the finisher), `flowbaby status` / `repair`. Real subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import PROJECT_ROOT
from tests.conftest import summary
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from flowbaby.cli import main; main()"]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **extra}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_flowbaby_data_stays_out_of_git(spawn, workspace: Path) -> None:
    _git(workspace, "init", "-q")
    (workspace / "app.py").write_text("print('hi')\n")
    installed = subprocess.run(
        [*CLI, "install", "--client", "claude-code", "--workspace", str(workspace)],
        env=_env(HOME=str(workspace.parent)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    assert (workspace / ".flowbaby" / ".gitignore").is_file()  # before any front ran
    bridge = spawn(workspace)
    bridge.result("ingestForAgent", summary())
    bridge.close()
    assert (workspace / ".flowbaby" / "memories.sqlite").is_file()
    listed = _git(workspace, "add", "-n", "-A").splitlines() + _git(workspace, "status", "--porcelain").splitlines()
    assert listed and not [line for line in listed if ".flowbaby" in line], listed
    assert any("app.py" in line for line in listed) and any(".mcp.json" in line for line in listed)


def test_the_data_folders_gitignore_is_flowbabys(spawn, workspace: Path) -> None:
    """Any other `.flowbaby/.gitignore` (one a repository committed) is replaced: issue 58 item 3."""
    data = workspace / ".flowbaby"
    data.mkdir()
    (data / ".gitignore").write_text("logs/\n")
    spawn(workspace).close()
    assert (data / ".gitignore").read_text().splitlines()[-1] == "*"


# -- short agent sessions ---------------------------------------------------------------------------


def _mcp_session(workspace: Path, n: int, stderr: Path) -> tuple[str, float]:
    """One short agent session as a client runs it: initialize, store a memory, close stdin, and
    SIGTERM the server's whole process group at once; SIGKILL after 2 s. Returns (operationId,
    seconds from closing stdin to the server's exit)."""
    proc = subprocess.Popen(
        [*CLI, "mcp", "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr.open("ab"),
        env=_env(FLOWBABY_FINISH_SEC="600"),
        cwd="/",
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply(call_id: int) -> dict[str, Any]:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, stderr.read_text(errors="replace")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == call_id:
                return message

    client = {"name": "short-agent", "version": "1.0"}
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
          "capabilities": {}, "clientInfo": client}})  # fmt: skip
    assert "result" in reply(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    arguments = {
        "topic": f"Short session {n}: cache decision",
        "context": f"Session {n} moved the session cache number {n} to Redis because billing/reconcile.py failed.",
        "decisions": [f"Use Redis cache {n} with a 15 minute TTL"],
    }
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "flowbaby_storeMemory", "arguments": arguments}})  # fmt: skip
    result = reply(2)["result"]
    assert not result.get("isError"), result
    operation_id: str = result["structuredContent"]["operationId"]
    closed = time.monotonic()
    proc.stdin.close()
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)  # a client tearing its server's tree down
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return operation_id, time.monotonic() - closed


def _ledger(workspace: Path) -> tuple[dict[str, tuple[str, str | None]], list[str]]:
    db = sqlite3.connect(f"file:{workspace / '.flowbaby' / 'memories.sqlite'}?mode=ro", uri=True, timeout=10)
    try:
        ops = {row[0]: (row[1], row[2]) for row in db.execute("SELECT operation_id, state, error_code FROM operations")}
        states = [row[0] for row in db.execute("SELECT graph_state FROM memories")]
    finally:
        db.close()
    return ops, states


def _owner_pid(workspace: Path) -> str:
    return (workspace / ".flowbaby" / "owner.lock").read_text().strip()


def _status(workspace: Path) -> dict[str, Any]:
    done = subprocess.run(
        [*CLI, "status", "--json", "--workspace", str(workspace)], env=_env(), capture_output=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def test_three_short_mcp_sessions_all_get_their_graph(workspace: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "mcp.stderr"
    sessions = [_mcp_session(workspace, n, stderr) for n in (1, 2, 3)]
    # Seconds from closing stdin to the exit (SIGKILL at 2.2 s). Not asserted: on a loaded machine the
    # kill may come first, and the finisher, started as soon as the batch is parked, must carry on anyway.
    exits = [round(seconds, 2) for _, seconds in sessions]
    print(f"mcp exits after closing stdin: {exits}")
    operation_ids = [op for op, _ in sessions]

    deadline = time.monotonic() + 400
    while True:
        ops, graph_states = _ledger(workspace)
        if all(ops.get(op, ("pending",))[0] in {"completed", "failed", "terminated"} for op in operation_ids):
            print(f"graphs settled {time.monotonic() - deadline + 400:.1f}s after the third session")
            break
        assert time.monotonic() < deadline, (ops, (workspace / ".flowbaby" / "logs" / "flowbaby.log").read_text())
        time.sleep(0.25)
    assert [ops[op] for op in operation_ids] == [("completed", None)] * 3, (ops, exits)
    assert graph_states == ["indexed"] * 3
    assert not [state for state, _ in ops.values() if state != "completed"], ops  # no crash, no failed attempt
    worker_log = (workspace / ".flowbaby" / "logs" / "worker.log").read_text(errors="replace")
    assert "exited at start-up" not in json.dumps(ops) and "Traceback" not in worker_log

    deadline = time.monotonic() + 60
    while _owner_pid(workspace):  # the finisher leaves once the work is done
        assert time.monotonic() < deadline
        time.sleep(0.5)
    status = _status(workspace)
    counts = status["index"]["counts"]
    assert (counts["memories"], counts["graphIndexed"], counts["withoutGraph"]) == (3, 3, 0)
    assert status["background"]["counts"] == {"completed": 3}
    text = subprocess.run([*CLI, "status", "--workspace", str(workspace)], env=_env(), capture_output=True, text=True)
    assert "memories: 3 (3 with their graph" in text.stdout and "0 pending, 0 running" in text.stdout


def test_kill_9_of_the_owner_mid_build_ends_every_operation_truly(spawn, workspace: Path) -> None:
    """The owner dies under a running batch: the next front resumes the operations under the ids the
    agent was given, and each ends completed (or failed with its true code, never a crash of ours)."""
    first = spawn(workspace)
    replies = [first.result("ingestForAgent", summary(f"topic-{n}", topic=f"Decision {n}")) for n in range(3)]
    operation_ids = [reply["operationId"] for reply in replies]
    deadline = time.monotonic() + 120
    while first.result("backgroundStatus", {})["counts"].get("running", 0) == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # the worker is starting or building
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()

    second = spawn(workspace)
    second.wait_idle(400)
    finals = [second.result("backgroundStatus", {"operationId": op}) for op in operation_ids]
    second.close()
    for final in finals:
        assert final["status"] == "completed" or (
            final["status"] == "failed" and final["errorCode"] not in {"WORKER_CRASHED", None}
        ), final
    assert [final["status"] for final in finals] == ["completed"] * 3, finals


def test_repair_from_the_command_line_rebuilds_a_failed_graph(spawn, workspace: Path) -> None:
    nowhere = subprocess.run([*CLI, "repair", "--workspace", str(workspace / "no")], env=_env(), capture_output=True)
    assert nowhere.returncode == 2 and b"not a flowbaby workspace" in nowhere.stderr
    hasty = spawn(workspace, env={**os.environ, "FLOWBABY_OPERATION_TIMEOUT_SEC": "0.2"})
    operation_id = hasty.result("ingestForAgent", summary())["operationId"]
    assert hasty.wait_notification(300)["params"]["errorCode"] == "BRIDGE_TIMEOUT"
    hasty.close()
    before = _status(workspace)
    assert before["index"]["status"] == "repair_needed" and before["background"]["counts"] == {"failed": 1}

    done = subprocess.run(
        [*CLI, "repair", "--json", "--workspace", str(workspace)],
        env=_env(FLOWBABY_FINISH_SEC="600"),
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["requeuedMemories"] == 1 and reply["operationId"] != operation_id
    deadline = time.monotonic() + 400  # the finisher builds it after the command has left
    while _ledger(workspace)[1] != ["indexed"]:
        assert time.monotonic() < deadline, _ledger(workspace)
        time.sleep(0.25)
    assert _ledger(workspace)[0][reply["operationId"]] == ("completed", None)


# -- serve --docs -----------------------------------------------------------------------------------


def test_the_docs_page_loads_nothing_from_elsewhere(serve, workspace: Path) -> None:  # noqa: F811
    server = serve(workspace, "--docs")
    page = httpx.get(f"{server.url}/docs", timeout=30)  # public, as the browser asks without the token
    assert page.status_code == 200 and "swagger-ui" in page.text
    assert not re.findall(r"(?:https?:)?//[\w.-]+", page.text), page.text  # no other origin, not even //host
    links = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(links) == 3 and all(link.startswith("/docs/assets/") for link in links), links
    for link in links:
        asset = httpx.get(f"{server.url}{link}", timeout=30)
        assert asset.status_code == 200 and len(asset.content) > 500, link
        if link.endswith(".css"):  # what the stylesheet loads: inline data only
            assert all(u.startswith(("data:", "#")) for u in re.findall(r"url\(['\"]?([^'\")]+)", asset.text))
    escape = httpx.get(f"{server.url}/docs/assets/%2e%2e/%2e%2e/%2e%2e/.flowbaby/api_token", timeout=30)
    assert escape.status_code == 404 and (workspace / ".flowbaby" / "api_token").read_text() not in escape.text
    assert httpx.get(f"{server.url}/api/agent/background", timeout=30).status_code == 401  # the rest still guarded
