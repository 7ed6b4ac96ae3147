"""Issue 46: the workspace's service starts itself. From nothing running, a hook starts the service
and gets the briefing; concurrent starts make one service; `flowbaby status|stop` see and end it;
it leaves when idle; `flowbaby ui` works in two projects at once without --port and sends no token
to a squatter on the recorded port; a SIGTERM during a graph batch exits within 5 s."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary
from tests.support.commands import serve_pids

pytestmark = pytest.mark.slow

DECISION = "Retry failed card charges 4 times with exponential backoff"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline", **extra}


def _flowbaby(workspace: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from flowbaby.cli import main; main()", *args, "--workspace", str(workspace)]
    return subprocess.run(command, env=env or _env(), capture_output=True, text=True, timeout=120, cwd=workspace)


def _hook(workspace: Path, event: str, payload: dict[str, Any], env: dict[str, str] | None = None) -> str:
    """The hook exactly as `flowbaby install` writes it: `python -S .../flowbaby/hook.py EVENT`."""
    command = [sys.executable, "-S", str(PROJECT_ROOT / "flowbaby" / "hook.py"), event, "--workspace", str(workspace)]
    done = subprocess.run(
        command, input=json.dumps(payload), env=env or _env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _record(workspace: Path) -> dict[str, Any]:
    return dict(json.loads((workspace / ".flowbaby" / "service.json").read_text()))


def _until(check: Any, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting until {what}")


def _stage(workspace: Path, graph: bool = False) -> None:
    """A memory staged by a bridge that then exits: nothing runs afterwards."""
    if not graph:
        (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    fields = {"topic": "Card charge retry policy", "context": "How billing retries failed card charges."}
    with BridgeClient(workspace, env=_env()) as bridge:
        assert bridge.result("ingestForAgent", {**fields, "decisions": [DECISION], "agentName": "opencode"})["staged"]
    assert not serve_pids(workspace)


@pytest.fixture
def staged(tmp_path: Path) -> Any:
    workspace = tmp_path / "project"
    workspace.mkdir()
    _stage(workspace)
    yield workspace
    for pid in serve_pids(workspace):
        os.kill(pid, signal.SIGKILL)


def test_a_hook_starts_the_service_and_two_at_once_make_one(staged: Path) -> None:
    """Before: `SessionStart: nothing injected (no owner endpoint ...)` and no output."""
    with ThreadPoolExecutor(2) as pool:
        briefings = list(pool.map(lambda s: _hook(staged, "SessionStart", {"session_id": s}), ["a", "b"]))
    assert all(DECISION in text for text in briefings), briefings
    time.sleep(1.0)  # a second service would have had time to start
    record = _record(staged)
    assert serve_pids(staged) == [record["pid"]]
    status = _flowbaby(staged, "status")
    assert f"service: pid {record['pid']} on http://127.0.0.1:{record['port']}" in status.stdout, status.stdout
    stopped = _flowbaby(staged, "stop")
    assert stopped.returncode == 0 and not serve_pids(staged), stopped.stderr
    assert not (staged / ".flowbaby" / "service.json").exists()
    assert (staged / ".flowbaby" / "owner.lock").read_text() == ""  # released cleanly
    assert "service: none running" in _flowbaby(staged, "status").stdout


def test_concurrent_starts_make_one_service_that_leaves_when_idle(staged: Path) -> None:
    env = _env(FLOWBABY_IDLE_EXIT_SEC="3")
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: _flowbaby(staged, "start", env=env), range(3)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    pid = _record(staged)["pid"]
    assert all(f"pid {pid} " in r.stdout for r in results), [r.stdout for r in results]
    # A start that lost the race may still be loading before it sees the lock and exits 0.
    _until(lambda: serve_pids(staged) == [pid], "the services that lost the race exit", timeout=30)
    # A recall through the owner is activity; then 3 s without any: it leaves by itself.
    assert "Flowbaby recalled" in _hook(
        staged, "UserPromptSubmit", {"session_id": "s", "prompt": "card charge retries"}
    )
    _until(lambda: not serve_pids(staged), "the idle service exits", timeout=30)
    assert not (staged / ".flowbaby" / "service.json").exists()
    assert _flowbaby(staged, "stop").returncode == 1  # nothing to stop


def _ui(workspace: Path) -> subprocess.CompletedProcess[str]:
    return _flowbaby(workspace, "ui", "--no-open")


def test_ui_in_two_projects_at_once_without_a_port(tmp_path: Path) -> None:
    """Before: the second project's ui failed with "another workspace's server ... pass --port"."""
    projects = [tmp_path / "one", tmp_path / "two"]
    for project in projects:
        project.mkdir()
        (project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    try:
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(_ui, projects))
        links = []
        for project, result in zip(projects, results, strict=True):
            assert result.returncode == 0, result.stderr
            link = result.stdout.strip().splitlines()[-1]
            assert link.startswith(f"http://127.0.0.1:{_record(project)['port']}/ui/signin?code="), link
            links.append(link)
        assert len({link.split("/ui/")[0] for link in links}) == 2  # a port each
        again = _ui(projects[0])  # reuses the running service
        assert again.returncode == 0 and again.stdout.split("/ui/")[0] == links[0].split("/ui/")[0]
        assert "started" not in again.stderr
        for link in links:  # each link signs in to its own project's server
            assert httpx.get(link, timeout=10, follow_redirects=False).status_code in (200, 302, 303)
    finally:
        with ThreadPoolExecutor(2) as pool:  # one service each: stopped side by side
            list(pool.map(lambda project: _flowbaby(project, "stop"), projects))


class Squatter:
    """A listener on a port that answers every request with a made-up proof and link, records
    every request's headers, and whose command line looks like `flowbaby serve`."""

    SCRIPT = r"""
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization")}) + "\n")
        body = json.dumps({"success": True, "status": "ready", "version": "0.1.0", "proof": "0" * 64,
                           "workspace": sys.argv[2], "path": "/ui/signin?code=SQUATTER", "expiresInSec": 120})
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(body.encode())
    do_GET = do_POST = _answer
    def log_message(self, *a): pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

    def __init__(self, folder: Path, workspace: Path) -> None:
        self.requests = folder / "squatter.jsonl"
        self.requests.touch()
        script = folder / "squatter.py"
        script.write_text(self.SCRIPT)
        # argv holds "flowbaby" and "serve", as a real service's does
        command = [sys.executable, str(script), str(self.requests), str(workspace), "flowbaby", "serve"]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def seen(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.requests.read_text().splitlines()]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_ui_sends_no_token_to_a_squatter_on_the_recorded_port(tmp_path: Path) -> None:
    """Before: ui sent the bearer token to whatever answered on its port and handed out its link."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    data = workspace / ".flowbaby"
    data.mkdir(mode=0o700)
    squatter = Squatter(tmp_path, workspace)
    try:
        record = {"pid": squatter.proc.pid, "port": squatter.port, "host": "127.0.0.1", "since": "x"}
        fd = os.open(data / "service.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(record))
        result = _ui(workspace)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "did not prove" in result.stderr and "SQUATTER" not in result.stdout + result.stderr
        seen = squatter.seen()
        assert seen and all(request["auth"] is None for request in seen), seen  # asked, never told the token
        token = (data / "api_token").read_text().strip()
        assert token not in squatter.requests.read_text()
    finally:
        squatter.stop()


def test_a_committed_service_record_is_not_trusted(tmp_path: Path) -> None:
    """A service.json that came with a repository (0644) naming a live process is ignored: ui starts
    the workspace's own service instead."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    data = workspace / ".flowbaby"
    data.mkdir(mode=0o700)
    squatter = Squatter(tmp_path, workspace)
    try:
        (data / "service.json").write_text(json.dumps({"pid": squatter.proc.pid, "port": squatter.port}))
        os.chmod(data / "service.json", 0o644)
        result = _ui(workspace)
        assert result.returncode == 0, result.stderr
        assert squatter.seen() == [] and f":{squatter.port}/" not in result.stdout
    finally:
        squatter.stop()
        _flowbaby(workspace, "stop")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.alone
def test_sigterm_during_a_graph_batch_exits_within_5_s_and_the_next_owner_finishes_it(tmp_path: Path) -> None:
    """Before: serve let the batch run its 30 s grace (22 s measured) before it exited."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = _env(FLOWBABY_FINISH_SEC="0")  # no finisher: the next owner must run the parked batch
    started = _flowbaby(workspace, "start", env=env)
    assert started.returncode == 0, started.stderr
    record = _record(workspace)
    url = f"http://127.0.0.1:{record['port']}"
    auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
    assert httpx.post(f"{url}/api/agent/ingest", json=summary(), headers=auth, timeout=30).status_code == 202

    def running() -> bool:
        reply = httpx.get(f"{url}/api/agent/background", headers=auth, timeout=10).json()
        return bool(reply["counts"].get("running"))

    _until(running, "the graph batch runs", timeout=60)
    time.sleep(1.0)  # inside cognee's add/cognify
    signalled = time.monotonic()
    os.kill(record["pid"], signal.SIGTERM)
    _until(lambda: not serve_pids(workspace), "serve exits", timeout=60)
    took = time.monotonic() - signalled
    assert took < 5.0, f"serve took {took:.1f} s to exit after SIGTERM"
    assert _port_free(record["port"])
    db = sqlite3.connect(workspace / ".flowbaby" / "memories.sqlite")
    states = [row[0] for row in db.execute("SELECT state FROM operations")]
    db.close()
    assert states == ["pending"], states  # parked under its id, not lost, not a crash
    with BridgeClient(workspace, env=_env()) as bridge:  # the next owner runs it
        status = bridge.wait_idle(timeout=300)
    assert status["counts"].get("completed") == 1 and not status["counts"].get("failed"), status


def test_the_hook_started_service_is_isolated_from_the_workspace(staged: Path, tmp_path: Path) -> None:
    """The service a hook starts runs with -P, its own source root first, stdin/out/err not the hook's."""
    assert DECISION in _hook(staged, "SessionStart", {"session_id": "iso"})
    pid = _record(staged)["pid"]
    words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert words[1:4] == [b"-P", b"-m", b"flowbaby"] and b"--idle-exit" in words, words
    assert os.getsid(pid) == pid  # a session of its own
    stdin = os.readlink(f"/proc/{pid}/fd/0")
    assert stdin == "/dev/null", stdin


def test_a_kill_loop_over_start_and_stop_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """Memories staged while the service is started (by `start` or a hook) and stopped (`flowbaby stop`,
    SIGTERM, kill -9) again and again: every acknowledged memory is stored once, every stored memory was
    sent and has one version, and each sits in exactly one graph operation, none left running."""
    import random

    workspace = tmp_path / "project"
    workspace.mkdir()
    env = _env(FLOWBABY_FINISH_SEC="0", FLOWBABY_MAX_QUEUED="1000")  # no 429 for the burst
    rng = random.Random(46)
    sent: set[str] = set()
    acked: set[str] = set()
    actions = {"stop": 0, "sigterm": 0, "kill9": 0}
    for round_ in range(6):
        if round_ % 2:
            _hook(workspace, "SessionStart", {"session_id": f"k{round_}"}, env=env)
            record = _until(lambda: _running_record(workspace), "the hook's service publishes its record")
        else:
            assert _flowbaby(workspace, "start", env=env).returncode == 0
            record = _record(workspace)
        url = f"http://127.0.0.1:{record['port']}/api/agent/ingest"
        auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
        stop = threading.Event()

        def burst(round_: int, url: str, auth: dict[str, str], stop: threading.Event) -> None:
            for i in range(40):
                if stop.is_set():
                    return
                topic = f"kill-loop-{round_}-{i}"
                sent.add(topic)
                try:
                    reply = httpx.post(url, json=summary(topic), headers=auth, timeout=10)
                except httpx.HTTPError:
                    return
                if reply.status_code == 202:
                    acked.add(topic)

        sender = threading.Thread(target=burst, args=(round_, url, auth, stop))
        sender.start()
        time.sleep(rng.uniform(1.0, 3.0))  # mid-burst
        action = rng.choice(list(actions))
        actions[action] += 1
        if action == "stop":
            assert _flowbaby(workspace, "stop", env=env).returncode == 0
        else:
            os.kill(record["pid"], signal.SIGTERM if action == "sigterm" else signal.SIGKILL)
        stop.set()
        sender.join(timeout=30)
        _until(lambda: not serve_pids(workspace), "the service is gone", timeout=30)
    with BridgeClient(workspace, env=_env(FLOWBABY_BUILD_GRAPH="0")) as bridge:  # the next owner recovers
        assert bridge.result("health")["status"] == "ready"
    db = sqlite3.connect(workspace / ".flowbaby" / "memories.sqlite")
    rows = db.execute("SELECT topic_id, COUNT(*), MIN(memory_id) FROM memories GROUP BY topic_id").fetchall()
    operations = db.execute("SELECT state, memory_ids FROM operations").fetchall()
    db.close()
    stored = {topic: count for topic, count, _ in rows}
    assert acked and acked <= set(stored), f"lost: {sorted(acked - set(stored))}"
    assert set(stored) <= sent and all(count == 1 for count in stored.values()), stored
    in_operations = [memory for _, ids in operations for memory in json.loads(ids)]
    assert sorted(in_operations) == sorted(memory for _, _, memory in rows)  # one operation each
    assert {state for state, _ in operations} <= {"pending", "completed"}, operations
    print(f"kill loop: {len(acked)} acknowledged, {len(stored)} stored, actions {actions}")


def _running_record(workspace: Path) -> dict[str, Any] | None:
    try:
        record = _record(workspace)
    except (OSError, ValueError):
        return None
    return record if record["pid"] in serve_pids(workspace) else None
