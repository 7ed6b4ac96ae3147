"""A bridge whose team-server token file is another private file (here a `~/.git-credentials`
line, mode 0600, as a workspace setting could name it): it refuses to start, and a stand-in server
on loopback receives no request at all, so the file's line never leaves the machine."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bridge.client import PROJECT_ROOT
from tests.support.commands import run_bridge_to_exit

CREDENTIAL = "https://dev:ghp-not-a-real-password-42@github.com"


def test_a_credentials_file_is_never_sent_as_a_token(tmp_path: Path) -> None:
    seen: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(f"{self.path} {self.headers.get('Authorization')}")
            self.send_response(401)
            self.end_headers()

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    credentials = tmp_path / ".git-credentials"
    credentials.write_text(CREDENTIAL + "\n")
    credentials.chmod(0o600)
    workspace = tmp_path / "laptop"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    try:
        bridge = run_bridge_to_exit(
            workspace,
            {
                **env,
                "PYTHONPATH": str(PROJECT_ROOT),
                "FLOWBABY_SERVER_URL": f"http://127.0.0.1:{server.server_port}",
                "FLOWBABY_SERVER_TOKEN_FILE": str(credentials),
            },
        )
    finally:
        server.shutdown()
    first = json.loads(bridge.stdout.splitlines()[0])
    assert bridge.returncode == 3 and first["method"] == "bridgeUnavailable", bridge.stderr
    assert first["params"]["errorCode"] == "FLOWBABY_ERROR" and "bearer token" in first["params"]["error"]
    assert seen == []
    assert b"ghp-not-a-real" not in bridge.stdout + bridge.stderr
