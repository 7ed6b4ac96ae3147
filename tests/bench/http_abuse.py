"""The HTTP abuse run (issue 12): a real `flowbaby serve` is hit by DNS-rebinding Host headers,
1,000 half-open connections, 300 MB bodies, 100k-deep JSON and a flood of garbage requests,
while a valid client in its own process (so this process's work cannot delay it) calls the API
every 100 ms. Returns the counts; tests/integration/test_http_abuse.py asserts them, `make bench` prints them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from graph.core import jsonwire

HALF_OPEN = 1000
BIG_BODY = 300 * 1024 * 1024
DEEP = 100_000
GARBAGE = 2000

MONITOR = r"""
import http.client, json, os, sys, time
port, token, out, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(out, "w") as log:
    while not os.path.exists(stop):
        started = time.perf_counter()
        try:
            # A new connection each time: the server must still accept one.
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/agent/background", headers={"Authorization": "Bearer " + token})
            reply = conn.getresponse()
            json.loads(reply.read())
            status = reply.status
            conn.close()
        except Exception as exc:
            status = type(exc).__name__
        log.write(json.dumps([round(time.perf_counter() - started, 4), status, time.time()]) + "\n")
        log.flush()
        time.sleep(0.1)
"""


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1024) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _response_head(sock: socket.socket) -> tuple[int, dict[str, Any] | None]:
    """Status and JSON body of the reply on `sock`, read until the server closes it."""
    sock.settimeout(10)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    try:
        return status, jsonwire.loads(body)
    except jsonwire.JSONInputError:
        return status, None


def rebinding(url: str, token: str) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {token}"}
    port = url.rsplit(":", 1)[1]
    hosts = [f"evil.example:{port}", "attacker.test", f"127.0.0.1.nip.io:{port}", f"localhost.evil:{port}"]
    refused = sum(
        httpx.get(f"{url}/api/agent/background", headers={**auth, "Host": h}).status_code == 421 for h in hosts
    )
    refused_health = sum(httpx.get(f"{url}/api/health", headers={"Host": h}).status_code == 421 for h in hosts)
    foreign = httpx.get(f"{url}/api/agent/background", headers={**auth, "Origin": "http://evil.example"})
    public = httpx.get(f"{url}/api/health").json()
    return {
        "hosts": len(hosts),
        "refused": refused,
        "refusedHealth": refused_health,
        "foreignOriginStatus": foreign.status_code,
        "publicHealthKeys": sorted(public),
    }


def half_open(port: int, pid: int, head_timeout: float) -> dict[str, Any]:
    started = time.perf_counter()
    sockets = []
    peak = 0
    for _ in range(HALF_OPEN):
        sock = _connect(port)
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # never finished
        sockets.append(sock)
        if len(sockets) % 100 == 0:
            peak = max(peak, _fds(pid))
    opened = time.perf_counter() - started
    time.sleep(1.0)
    settled = _fds(pid)
    closed_at_once = sum(_closed_by_peer(s) for s in sockets)
    time.sleep(head_timeout + 2)
    closed = sum(_closed_by_peer(s) for s in sockets)
    for sock in sockets:
        sock.close()
    return {
        "opened": len(sockets),
        "openSec": round(opened, 2),
        "serverFdsPeak": peak,
        "serverFdsAfter1s": settled,
        "closedWithin1s": closed_at_once,
        "closedAfterHeadTimeout": closed,
    }


def big_bodies(port: int, token: str, pid: int) -> dict[str, Any]:
    rss_before = _rss_mb(pid)
    results: dict[str, Any] = {}
    for name, auth, framing in (
        ("contentLength", True, f"Content-Length: {BIG_BODY}"),
        ("chunked", True, "Transfer-Encoding: chunked"),
        ("unauthenticated", False, f"Content-Length: {BIG_BODY}"),
    ):
        sock = _connect(port)
        head = f"POST /api/agent/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{framing}\r\n"
        if auth:
            head += f"Authorization: Bearer {token}\r\n"
        sock.sendall(head.encode() + b"\r\n")
        chunk = b"x" * (1024 * 1024)
        if framing.startswith("Transfer"):
            chunk = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        sent = 0
        started = time.perf_counter()
        try:
            sock.settimeout(10)
            while sent < BIG_BODY:
                sock.sendall(chunk)
                sent += 1024 * 1024
        except OSError:
            pass
        status, body = _response_head(sock)
        sock.close()
        results[name] = {
            "status": status,
            "errorCode": (body or {}).get("errorCode"),
            "sentMB": sent // (1024 * 1024),
            "sec": round(time.perf_counter() - started, 2),
        }
    results["serverRssGrowthMB"] = round(_rss_mb(pid) - rss_before, 1)
    return results


def _code(reply: httpx.Response) -> Any:
    """The reply's contract or JSON-RPC code, or "non-JSON" when the body is not strict JSON."""
    try:
        body = jsonwire.loads(reply.content)
    except jsonwire.JSONInputError:
        return "non-JSON"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return body.get("errorCode") or body.get("error") if isinstance(body, dict) else "not an object"


def deep_json(url: str, token: str) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {token}"}
    deep = b"[" * DEEP + b"]" * DEEP
    out: dict[str, Any] = {}
    for path in ("/api/agent/ingest", "/api/agent/retrieve"):
        reply = httpx.post(f"{url}{path}", headers={**auth, "Content-Type": "application/json"}, content=deep)
        out[path] = [reply.status_code, _code(reply)]
    mcp_headers = {**auth, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for name, body in (
        ("mcpDeep", deep),
        ("mcpNaNId", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}'),
        ("mcp1e400Id", b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}'),
        ("mcpBatch", b"[" + b",".join([b'{"jsonrpc":"2.0","id":1,"method":"ping"}'] * 1000) + b"]"),
    ):
        reply = httpx.post(f"{url}/mcp", headers=mcp_headers, content=body)
        out[name] = [reply.status_code, _code(reply)]
    return out


def garbage(port: int, stderr: Path) -> dict[str, Any]:
    before = stderr.stat().st_size
    for _ in range(GARBAGE):
        with _connect(port) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            with contextlib.suppress(OSError):
                sock.recv(1024)
    time.sleep(0.5)
    return {"requests": GARBAGE, "stderrGrowthBytes": stderr.stat().st_size - before}


def _warm(url: str, token: str, timeout: float = 120.0) -> None:
    """Wait until the server has loaded its model: the run measures abuse, not a cold start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if httpx.get(f"{url}/api/health", headers={"Authorization": f"Bearer {token}"}).json()["embedderLoaded"]:
            return
        time.sleep(0.2)


def run_abuse(url: str, token: str, pid: int, stderr: Path, head_timeout: float) -> dict[str, Any]:
    """Every attack in turn, with the monitor running throughout."""
    port = int(url.rsplit(":", 1)[1])
    _warm(url, token)
    with tempfile.TemporaryDirectory() as scratch:
        samples, stop = Path(scratch) / "monitor.jsonl", Path(scratch) / "stop"
        monitor = subprocess.Popen([sys.executable, "-c", MONITOR, str(port), token, str(samples), str(stop)])
        try:
            time.sleep(1.0)
            phases: list[tuple[str, float]] = [("start", time.time())]
            report: dict[str, Any] = {"rebinding": rebinding(url, token)}
            phases.append(("halfOpen", time.time()))
            report["halfOpen"] = half_open(port, pid, head_timeout)
            phases.append(("bigBody", time.time()))
            report["bigBody"] = big_bodies(port, token, pid)
            phases.append(("deepJson", time.time()))
            report["deepJson"] = deep_json(url, token)
            phases.append(("garbage", time.time()))
            report["garbage"] = garbage(port, stderr)
            time.sleep(0.5)
        finally:
            stop.touch()
            monitor.wait(30)
        calls = [json.loads(line) for line in samples.read_text().splitlines()]
    latencies = sorted(seconds for seconds, _, _ in calls)

    def phase(at: float) -> str:
        return [name for name, start in phases if start <= at][-1] if at >= phases[0][1] else "before"

    slowest = sorted(calls, reverse=True)[:3]
    report["validClient"] = {
        "calls": len(calls),
        "failed": sum(status != 200 for _, status, _ in calls),
        "medianSec": latencies[len(latencies) // 2] if latencies else None,
        "maxSec": latencies[-1] if latencies else None,
        "slowest": [[seconds, status, phase(at)] for seconds, status, at in slowest],
    }
    return report


def run_http_faults(root: Path) -> dict[str, Any]:
    """`make bench`'s faults.http: the abuse run against a fresh `flowbaby serve` in `root`."""
    from api.guard import HEADER_TIMEOUT_SEC
    from bridge.client import PROJECT_ROOT

    workspace = root / "ws"
    workspace.mkdir(parents=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stderr = root / "serve.stderr"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    command = [sys.executable, "-c", "from flowbaby.cli import main; main()", "serve", "--workspace", str(workspace)]
    with stderr.open("wb") as log:
        proc = subprocess.Popen([*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=log, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"flowbaby serve did not start: {stderr.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        token = (workspace / ".flowbaby" / "api_token").read_text().strip()
        return run_abuse(url, token, proc.pid, stderr, HEADER_TIMEOUT_SEC)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
