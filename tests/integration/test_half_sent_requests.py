"""Issue 26 item 8 against a real uvicorn (`flowbaby serve`): 40 connections each send
`GET /api/health` (and `POST /api/health`) with `Content-Length: 10` and no body. Each is
answered at once without its body, and a token holder is served 200 promptly meanwhile."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.integration.test_http_api import serve  # noqa: F401 (fixture)

HALF_SENT = 40


def _head(sock: socket.socket, deadline: float) -> bytes:
    """The status line of the response, or b"" if none came by the deadline."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return sock.recv(4096).split(b"\r\n", 1)[0]
    except TimeoutError:
        return b""


def test_half_sent_public_requests_do_not_block_token_holders(serve, workspace: Path) -> None:  # noqa: F811
    server = serve(workspace)
    token = (workspace / ".flowbaby" / "api_token").read_text().strip()
    sockets = []
    try:
        for i in range(HALF_SENT):
            sock = socket.create_connection(("127.0.0.1", server.port))
            method = "GET" if i % 2 else "POST"
            sock.sendall(f"{method} /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n".encode())
            sockets.append(sock)
        time.sleep(0.5)  # all of them in the server's hands
        started = time.monotonic()
        reply = httpx.get(
            f"{server.url}/api/agent/background", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        elapsed = time.monotonic() - started
        print(f"{HALF_SENT} half-sent requests open: a token holder got {reply.status_code} in {elapsed:.3f}s")
        assert reply.status_code == 200, reply.text
        assert elapsed < 2.0, elapsed
        deadline = time.monotonic() + 5
        heads = [_head(sock, deadline) for sock in sockets]
        assert heads.count(b"HTTP/1.1 200 OK") == HALF_SENT // 2, heads  # GET: answered without the body
        assert heads.count(b"HTTP/1.1 405 Method Not Allowed") == HALF_SENT // 2, heads
    finally:
        for sock in sockets:
            sock.close()
