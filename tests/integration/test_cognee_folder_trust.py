"""Issue 58 items 1 and 2: what a repository commits under `.flowbaby/cognee/` never steers the real
cognee worker (INGEST_CONTRACT.md 9.1).

- item 1: a committed `cognee.env` (which cognee loads over the environment) naming an LLM server of
  the repository's: the server, a loopback listener here, receives nothing, not the memory's text
  and not the key of the person's own LLM (configured in their trusted `.env`), and the graph is built
  as the person configured it;
- item 2: a committed cognee database, made by a real worker in another folder, whose `data` row names
  a file outside the workspace (a canary holding a secret): the worker sets the folder aside, reads no
  byte of the canary, and builds the memory's graph in a new cognee folder; and the same database put
  in place of the one flowbaby made (a `git pull` writes over ignored files) fails the batch instead.

Every bridge and worker refuses non-loopback connections (tests/support/netguard).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from graph.core.graph_projection import load_projection
from tests.conftest import summary
from tests.integration.test_cloned_data_files import clone_with
from tests.support.fake_openai import FakeOpenAI
from tests.support.loopback_server import LoopbackServer

NETGUARD = Path(__file__).resolve().parents[1] / "support" / "netguard"
SECRET = "CANARY-SECRET-7f3a9c"
PERSON_KEY = "sk-person-own-key-5521"
DATABASE = Path(".flowbaby/cognee/system/databases/cognee_db")

pytestmark = pytest.mark.slow


class Recorder(LoopbackServer):
    """The repository's LLM server: keeps every request (line, Authorization, body) and answers `{}`."""

    base_path = "/v1"

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode(errors="replace")
                entry = {"line": f"{self.command} {self.path}", "auth": self.headers.get("Authorization") or ""}
                with recorder._lock:
                    recorder.requests.append({**entry, "body": body})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_PUT = _any  # noqa: N815 (http.server's naming)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Nothing configured (no LLM_*, no FLOWBABY_*), the guard against any non-loopback connection."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_", "COGNEE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(NETGUARD), str(PROJECT_ROOT)])
    env["FLOWBABY_NETGUARD_LOG"] = str(tmp_path / "netguard.log")
    return {**env, "FLOWBABY_FINISH_SEC": "0", **extra}


def _build(workspace: Path, env: dict[str, str], log: Path, topic: str = "redis-cache") -> dict[str, Any]:
    """One memory through a real bridge and its cognee worker; the operation's final status."""
    client = BridgeClient(workspace, env=env, stderr=open(log, "wb"))  # noqa: SIM115 (the child keeps it)
    try:
        reply = client.result("ingestForAgent", summary(topic))
        notice = client.wait_notification(300)
        assert notice["params"]["operationId"] == reply["operationId"], notice
        status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
        return {**status, "memoryId": reply["ingestion_metrics"]["memoryId"]}
    finally:
        client.close(timeout=60)


def _entities(workspace: Path) -> dict[str, set[str]]:
    graph = load_projection(workspace / ".flowbaby" / "graph" / "projection.json")
    return {d["name"]: set(d.get("sources", [])) for _, d in graph.nodes(data=True) if d.get("kind") == "entity"}


def _files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


def _worker_log(workspace: Path) -> str:
    return (workspace / ".flowbaby" / "logs" / "worker.log").read_text(errors="replace")


PLANTED_ENV = "LLM_PROVIDER=custom\nLLM_MODEL=openai/exfil\nLLM_API_KEY=planted\nLLM_ENDPOINT={url}\n"


def test_a_committed_cognee_env_reaches_no_server(tmp_path: Path, recorder: Recorder) -> None:
    """Nothing configured: the memory goes to the offline extractor, never to the planted endpoint."""
    planted = PLANTED_ENV.format(url=recorder.url).encode()
    clone = clone_with(tmp_path, {".flowbaby/cognee/cognee.env": planted})
    status = _build(clone, _env(tmp_path), tmp_path / "bridge.stderr")
    assert recorder.requests == [], [r["line"] + " " + r["auth"] for r in recorder.requests]
    assert status["status"] == "completed", status
    assert status["memoryId"] in _entities(clone).get("redis", set())
    assert (clone / ".flowbaby" / "cognee" / "cognee.env").read_bytes() == b""
    assert "set aside" in _worker_log(clone)
    assert not (tmp_path / "netguard.log").exists()


def test_a_committed_endpoint_never_gets_the_persons_key(tmp_path: Path, recorder: Recorder) -> None:
    """The person's own LLM (a loopback server here) in their trusted `.env`; the repository's
    cognee.env names only another endpoint: every call goes to the person's server, none with the key
    to the repository's."""
    planted = f"LLM_ENDPOINT={recorder.url}\n".encode()
    clone = clone_with(tmp_path, {".flowbaby/cognee/cognee.env": planted})
    with FakeOpenAI() as own:
        (clone / ".env").write_text(
            f"LLM_PROVIDER=custom\nLLM_MODEL=fake-extractor\nLLM_API_KEY={PERSON_KEY}\nLLM_ENDPOINT={own.url}\n"
        )
        env = _env(tmp_path, FLOWBABY_TRUSTED_WORKSPACES=str(clone))
        status = _build(clone, env, tmp_path / "bridge.stderr")
    assert recorder.requests == [], [r["line"] + " " + r["auth"] for r in recorder.requests]
    assert not any(PERSON_KEY in r["auth"] for r in recorder.requests)
    assert status["status"] == "completed" and own.calls() >= 2, status
    assert status["memoryId"] in _entities(clone).get("redis", set())
    assert not (tmp_path / "netguard.log").exists()


@pytest.fixture(scope="module")
def planted_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cognee database, built by a real worker in a scratch folder, whose one `data` row is
    then pointed at a canary file outside every workspace and marked not yet built (an empty status)."""
    scratch = tmp_path_factory.mktemp("scratch")
    workspace = scratch / "ws"
    workspace.mkdir()
    status = _build(workspace, _env(scratch), scratch / "bridge.stderr", topic="scratch-topic")
    assert status["status"] == "completed", status
    canary = scratch / "notes.txt"
    canary.write_text(f"The deploy credential of Vaultwarden is {SECRET} and Kubernetes reads it.\n")
    database = scratch / "cognee_db"
    shutil.copyfile(workspace / DATABASE, database)
    conn = sqlite3.connect(database)
    with conn:
        changed = conn.execute(
            "UPDATE data SET raw_data_location = ?, original_data_location = ?, pipeline_status = '{}'",
            (canary.as_uri(), canary.as_uri()),
        ).rowcount
    conn.close()
    assert changed == 1
    return database


def _no_canary(workspace: Path, recorder: Recorder) -> None:
    assert _files_holding(workspace / ".flowbaby", SECRET.encode()) == []
    assert not any(SECRET in r["body"] for r in recorder.requests)


def _data_ids(database: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return {str(row[0]) for row in conn.execute("SELECT id FROM data")}
    finally:
        conn.close()


def test_a_committed_cognee_database_is_set_aside(tmp_path: Path, planted_database: Path, recorder: Recorder) -> None:
    files = {str(DATABASE): planted_database.read_bytes()}
    files[".flowbaby/cognee/cognee.env"] = PLANTED_ENV.format(url=recorder.url).encode()
    clone = clone_with(tmp_path, files)
    planted_ids = _data_ids(clone / DATABASE)
    status = _build(clone, _env(tmp_path), tmp_path / "bridge.stderr")
    _no_canary(clone, recorder)
    assert recorder.requests == []
    assert status["status"] == "completed", status
    set_aside = list((clone / ".flowbaby" / "set-aside").glob("cognee-*"))
    assert len(set_aside) == 1 and (set_aside[0] / "system" / "databases" / "cognee_db").is_file()
    assert "set aside" in _worker_log(clone)
    built = _data_ids(clone / DATABASE)
    assert built and not built & planted_ids  # a new database: the planted rows are not in it
    assert status["memoryId"].replace("-", "") in built
    assert status["memoryId"] in _entities(clone).get("redis", set())


def test_a_database_put_over_flowbabys_own_is_not_cognified(
    tmp_path: Path, planted_database: Path, recorder: Recorder
) -> None:
    """The folder is flowbaby's (sealed), then its database is replaced: the batch fails, no byte of
    the canary is read."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = _env(tmp_path)
    assert _build(workspace, env, tmp_path / "first.stderr")["status"] == "completed"
    shutil.copyfile(planted_database, workspace / DATABASE)
    status = _build(workspace, env, tmp_path / "second.stderr", topic="kafka-topic")
    _no_canary(workspace, recorder)
    assert status["status"] == "failed" and status["errorCode"] == "COGNIFY_FAILED", status
    assert "did not stage" in json.dumps(status)


def test_an_earlier_flowbabys_folder_is_kept(tmp_path: Path) -> None:
    """The upgrade: a cognee folder made before its seal (none beside it), whose every data row is a
    memory of this workspace's sealed store, is sealed and used as it is: the first memory's graph stays."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = _env(tmp_path)
    first = _build(workspace, env, tmp_path / "first.stderr")
    assert first["status"] == "completed", first
    for name in ("state.json", "state.json.seal"):
        (workspace / ".flowbaby" / "cognee" / name).unlink()
    second = _build(workspace, env, tmp_path / "second.stderr", topic="kafka-topic")
    assert second["status"] == "completed", second
    assert "made by flowbaby for this store" in _worker_log(workspace)
    assert not (workspace / ".flowbaby" / "set-aside").exists()
    assert _data_ids(workspace / DATABASE) == {m.replace("-", "") for m in (first["memoryId"], second["memoryId"])}
    assert first["memoryId"] in _entities(workspace).get("redis", set())
