"""Issue 26 item 1: no flowbaby process imports from the workspace it runs in. A cloned repo's
top-level `json.py`, `graph/` and `api/` packages write a marker when imported (then hand over
to the real module, as a hostile one would, so the work goes on). A bridge started as
`python -m bridge` in the workspace (no -P) owns it, builds a memory's graph in the cognee
worker, exports and derives the ONNX models into a fresh cache, searches through the LanceDB
children, imports and searches a session; `flowbaby serve` (the console script) in the same
folder works through it. No marker may appear, and every step must succeed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary
from tests.integration.test_http_api import _free_port
from tests.support.session_fixtures import OpenCodeDb, text

pytestmark = pytest.mark.slow

HOSTILE = """
import importlib, os, sys
with open(os.path.join({marks!r}, __name__ + "-" + str(os.getpid())), "w") as _f:
    _f.write(" ".join(sys.argv))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != {root!r}]
del sys.modules[__name__]
sys.modules[__name__] = importlib.import_module(__name__)
"""


def _plant(workspace: Path, marks: Path) -> None:
    """What a cloned repository may commit: modules named like the stdlib's and flowbaby's."""
    body = HOSTILE.format(marks=str(marks), root=os.path.realpath(workspace))
    (workspace / "json.py").write_text(body)
    for package in ("graph", "api"):
        (workspace / package).mkdir()
        (workspace / package / "__init__.py").write_text(body)


def test_no_flowbaby_process_imports_from_the_workspace(workspace: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    _plant(workspace, marks)
    db = OpenCodeDb(tmp_path / "opencode")
    db.session("ses_canary", workspace, "Canary placement")
    db.turn("ses_canary", "user", text("Which region should the payments canary run in?"))
    db.turn("ses_canary", "assistant", text("Put the canary in eu-west-3: it has the lowest card-network latency."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    env |= {
        "PYTHONPATH": str(PROJECT_ROOT),
        "LLM_PROVIDER": "offline",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # the ONNX export and the session model's derivation run
        "FLOWBABY_SESSIONS_OPENCODE_DIR": str(tmp_path / "opencode"),
        "FLOWBABY_SESSIONS_CLAUDE_CODE": "0",
        "FLOWBABY_SESSIONS_WATCH": "0",
    }
    stderr = (tmp_path / "bridge.stderr").open("wb")
    owner = BridgeClient(workspace, command=[sys.executable, "-m", "bridge"], cwd=workspace, env=env, stderr=stderr)
    server = None
    try:
        assert owner.result("health", timeout=180)["status"] == "ready"
        assert owner.result("ingestForAgent", summary(), timeout=120)["staged"] is True
        status = owner.wait_idle(timeout=300)
        assert status["counts"].get("completed") and not status["counts"].get("failed"), status
        reply = owner.result("retrieveForAgent", {"query": "Why did we move the session cache to Redis?"})
        assert reply["entries"] and reply["entries"][0]["topicId"] == "redis-cache"
        imported = owner.result("sessionsImport", {"session_id": "ses_canary"}, timeout=180)
        assert imported["index_status"]["status"] == "ready", imported
        hits = owner.result("sessionsSearch", {"session_id": "ses_canary", "q": "lowest card network latency"})
        assert "eu-west-3" in hits["results"][0]["chunk_text"], hits

        port = _free_port()
        serve_log = tmp_path / "serve.stderr"
        script = Path(sys.executable).parent / "flowbaby"
        server = subprocess.Popen(
            [str(script), "serve", "--workspace", str(workspace), "--port", str(port)],
            cwd=workspace,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=serve_log.open("wb"),
        )
        token_file = workspace / ".flowbaby" / "api_token"
        url = f"http://127.0.0.1:{port}/api/agent/sessions/search"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, serve_log.read_text(errors="replace")
            try:
                bearer = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
                found = httpx.get(url, params={"q": "canary region"}, headers=bearer, timeout=60)
                break
            except (httpx.TransportError, FileNotFoundError):
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.3)
        assert found.status_code == 200 and "eu-west-3" in found.text, found.text
    finally:
        if server is not None:
            server.terminate()
            server.wait(60)
        owner.close()
        db.close()
    worker_log = workspace / ".flowbaby" / "logs" / "worker.log"
    assert worker_log.is_file()  # the cognee worker did run
    assert sorted(p.name for p in marks.iterdir()) == [], [p.read_text() for p in marks.iterdir()]


def test_ui_start_and_the_hooks_service_import_nothing_from_the_workspace(tmp_path: Path) -> None:
    """Issue 45.1: `flowbaby ui` started `python -m flowbaby serve` without -P in the repository, so a
    committed `flowbaby/` package replaced the real one. ui, start, status, stop and the service a hook
    starts, each run in a workspace that plants json.py, graph/, api/ and flowbaby/: no marker."""
    workspace, marks = tmp_path / "repo", tmp_path / "marks"
    workspace.mkdir()
    marks.mkdir()
    _plant(workspace, marks)
    body = (workspace / "json.py").read_text()
    (workspace / "flowbaby").mkdir()
    (workspace / "flowbaby" / "__init__.py").write_text(body)
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    env |= {"PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline"}
    script = str(Path(sys.executable).parent / "flowbaby")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([script, *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=120)

    try:
        ui = run("ui", "--no-open")
        assert ui.returncode == 0 and "/ui/signin?code=" in ui.stdout, ui.stderr
        assert run("stop").returncode == 0
        hook = [sys.executable, "-S", str(PROJECT_ROOT / "flowbaby" / "hook.py"), "SessionStart"]
        done = subprocess.run(
            hook, cwd=workspace, env=env, input=b'{"session_id": "s"}', capture_output=True, timeout=60
        )
        assert done.returncode == 0
        deadline = time.monotonic() + 20  # the hook started the service; it publishes once its port answers
        while not (workspace / ".flowbaby" / "service.json").is_file():
            assert time.monotonic() < deadline, "no service.json"
            time.sleep(0.1)
        assert "service: pid" in run("status").stdout
        assert run("stop").returncode == 0
        started = run("start")
        assert started.returncode == 0, started.stderr
    finally:
        run("stop")
    assert sorted(p.name for p in marks.iterdir()) == [], [p.read_text() for p in marks.iterdir()]
