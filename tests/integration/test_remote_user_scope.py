"""Issue 58, robustness: `flowbaby serve --allow-remote` on an embedded workspace answered `scope=user` (and
fused the user store into retrieval) for whoever held that workspace's token. The person's cross-project
store stays on this machine's loopback servers: a server started with --allow-remote serves the project's
store only (docs/contract/11-http-api.md), whoever connects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.test_http_api import Server
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

PREFERENCE = "Write every commit message in the imperative mood"


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        + ["-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_a_server_started_with_allow_remote_serves_no_user_memory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "FLOWBABY_USER_STORE": str(tmp_path / "user"), "FLOWBABY_BUILD_GRAPH": "0"}
    added = run_flowbaby(
        *("memories", "add", "--workspace", str(project), "--scope", "user", "--topic", "Commit messages"),
        *("--topic-id", "commit-style", "--context", "How I write commits.", "--decision", PREFERENCE),
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert added.returncode == 0, added.stderr
    cert, key = _certificate(tmp_path)
    server = Server(
        project, "--host", "0.0.0.0", "--allow-remote", "--tls-cert", str(cert), "--tls-key", str(key), env=env
    )
    try:
        with httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=False, timeout=60) as http:  # noqa: S501
            _wait_ready(http)
            http.headers["Authorization"] = f"Bearer {(project / '.flowbaby' / 'api_token').read_text().strip()}"
            _check(http)
    finally:
        server.stop()


def _wait_ready(http: httpx.Client) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if http.get("/api/health").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise TimeoutError("server did not start")


def _refused(reply: httpx.Response, code: str) -> None:
    body = reply.json()
    assert reply.status_code == 400 and body["errorCode"] == code, reply.text
    assert body.get("fields") == ["scope"] and "--allow-remote" in (body.get("message") or body["error"]), body


def _check(http: httpx.Client) -> None:
    ours = http.post("/api/agent/memories", json={"topic": "Logging", "context": "JSON lines to stdout."})
    assert ours.status_code < 300 and ours.json()["scope"] == "project", ours.text
    stored = http.post("/api/agent/memories", json={"topic": "Mine", "context": "A preference.", "scope": "user"})
    _refused(stored, "INVALID_PAYLOAD")
    _refused(http.get("/api/agent/memories", params={"scope": "user"}), "INVALID_PAYLOAD")
    _refused(http.get("/api/agent/memories/commit-style", params={"scope": "user"}), "INVALID_PAYLOAD")
    _refused(http.delete("/api/agent/memories/commit-style", params={"scope": "user"}), "INVALID_PAYLOAD")
    _refused(http.get("/api/agent/export", params={"scope": "user"}), "INVALID_PAYLOAD")
    asked = {"query": "how do I write commit messages", "maxResults": 5}
    _refused(http.post("/api/agent/retrieve", json={**asked, "scope": "user"}), "INVALID_REQUEST")
    seen: list[Any] = [
        http.get("/api/agent/memories", params={"scope": "all"}).json(),
        http.post("/api/agent/retrieve", json=asked).json(),
        http.post("/api/agent/retrieve", json={**asked, "scope": "all"}).json(),
        http.get("/api/agent/memories/commit-style").json(),  # no fallback to the user store
        http.get("/api/agent/memories/commit-style/context").json(),
    ]
    text = json.dumps(seen)
    assert PREFERENCE not in text, text
    assert [s.get("errorCode") for s in seen[3:]] == ["NOT_FOUND", "NOT_FOUND"], seen[3:]
    assert '"scope": "user"' not in text
