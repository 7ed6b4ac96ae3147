"""Issue 12, security items against real processes: a bridge fed hostile JSON and oversized
batches, `flowbaby serve` refusing a committed token file and remote binding without TLS, TLS
served for real, and a cloned repo's LLM endpoint that never receives the user's key."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from bridge.server import MAX_BATCH
from graph.core import jsonwire
from tests.conftest import summary
from tests.integration.test_http_api import Server, _free_port
from tests.support.fake_openai import FakeOpenAI
from tests.unit.api.test_hardening_security import HOSTILE


def test_the_bridge_answers_hostile_json_with_strict_json(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    for name, line in HOSTILE.items():
        reply = client.send_raw(line + b"\n")
        assert reply["error"]["code"] == -32700 and reply["id"] is None, name
    call = b'{"jsonrpc":"2.0","id":1,"method":"health"}'
    too_many = client.send_raw(b"[" + b",".join([call] * (MAX_BATCH + 1)) + b"]\n")
    assert too_many["error"]["code"] == -32600
    health = client.result("health")
    assert health["llmSource"] in {"environment", "default"}
    for line in client.raw_lines:
        jsonwire.loads(line)  # every line out is strict JSON (no NaN, no Infinity)


def test_serve_refuses_a_committed_token_file(workspace: Path) -> None:
    token_file = workspace / ".flowbaby" / "api_token"
    token_file.parent.mkdir()
    token_file.write_text("known-to-the-repo\n")
    token_file.chmod(0o644)
    server = Server(workspace)
    try:
        assert server.proc.wait(120) == 3
    finally:
        server.stop()
    assert b"mode 0644, not 0600" in server.log.read_bytes()


def test_serve_beyond_loopback_needs_tls(workspace: Path) -> None:
    server = Server(workspace, "--host", "0.0.0.0", "--allow-remote")
    try:
        assert server.proc.wait(60) == 2
    finally:
        server.stop()
    assert b"--tls-cert and --tls-key" in server.log.read_bytes()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_serve_speaks_tls_with_a_certificate(workspace: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        + ["-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    server = Server(workspace, "--tls-cert", str(cert), "--tls-key", str(key))
    trust = ssl.create_default_context(cafile=str(cert))
    try:
        url = server.url.replace("http://", "https://")
        deadline = time.monotonic() + 120
        while True:
            try:
                reply = httpx.get(f"{url}/api/health", verify=trust)
                break
            except httpx.TransportError:
                assert server.proc.poll() is None and time.monotonic() < deadline, server.log.read_text()
                time.sleep(0.2)
        assert reply.status_code == 200 and reply.json()["status"] == "ready"
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/api/health")  # no clear-text HTTP on that port
    finally:
        server.stop()


@pytest.mark.slow
def test_a_cloned_repo_endpoint_never_receives_the_users_key(spawn, workspace: Path) -> None:
    with FakeOpenAI() as attacker:
        (workspace / ".env").write_text(f"LLM_PROVIDER=custom\nLLM_MODEL=fake-extractor\nLLM_ENDPOINT={attacker.url}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_TRUSTED"))}
        client = spawn(workspace, env={**env, "LLM_API_KEY": "sk-users-own-key"})
        reply = client.result("ingestForAgent", summary())
        notice = client.wait_notification(300)
        assert notice["params"]["operationId"] == reply["operationId"]
        assert attacker.calls() == 0  # neither the key nor the memory went to the repo's endpoint
        assert client.result("health")["llmSource"] == "environment"


def test_bridge_http_refuses_a_committed_token_file(spawn, workspace: Path) -> None:
    token_file = workspace / ".flowbaby" / "api_token"
    token_file.parent.mkdir()
    token_file.write_text("known-to-the-repo\n")
    token_file.chmod(0o644)
    client = spawn(workspace, "--http", "--port", str(_free_port()))
    notice = client.wait_notification(120)
    assert notice["method"] == "bridgeUnavailable" and notice["params"]["errorCode"] == "FLOWBABY_ERROR"
    assert "not 0600" in notice["params"]["error"]
    assert client.proc.wait(60) == 3
