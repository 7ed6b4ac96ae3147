"""Issue 12's HTTP abuse run against a real uvicorn (`flowbaby serve`): rebinding Host headers,
1,000 half-open connections, 300 MB bodies, 100k-deep JSON and garbage, while a valid client is
served within 1 s throughout (tests/bench/http_abuse.py does the attacking)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.guard import HEADER_TIMEOUT_SEC, MAX_CONNECTIONS
from tests.bench.http_abuse import HALF_OPEN, run_abuse
from tests.integration.test_http_api import Server

pytestmark = [pytest.mark.slow, pytest.mark.alone]  # the 1 s bound holds with no other test beside it


def test_http_abuse_run(workspace: Path) -> None:
    server = Server(workspace)
    try:
        server.wait_ready()
        token = (workspace / ".flowbaby" / "api_token").read_text().strip()
        report = run_abuse(server.url, token, server.proc.pid, server.log, HEADER_TIMEOUT_SEC)
    finally:
        server.stop()
    print(json.dumps(report, indent=1))

    rebinding = report["rebinding"]
    assert rebinding["refused"] == rebinding["hosts"] == rebinding["refusedHealth"]
    assert rebinding["foreignOriginStatus"] == 403
    assert rebinding["publicHealthKeys"] == ["status", "success", "version"]

    half_open = report["halfOpen"]
    assert half_open["serverFdsAfter1s"] < MAX_CONNECTIONS + 100  # descriptors stay bounded
    assert half_open["closedAfterHeadTimeout"] == HALF_OPEN  # none is held past the head deadline

    big = report["bigBody"]
    for name in ("contentLength", "chunked", "unauthenticated"):
        assert big[name]["status"] in {413, 401, 0}, big  # 0: the reset beat the reply to us
        assert big[name]["sentMB"] < 100, big  # the server stopped reading long before 300 MB
    assert big["contentLength"]["status"] == 413 and big["unauthenticated"]["status"] == 401
    assert big["serverRssGrowthMB"] < 100

    deep = report["deepJson"]
    assert deep["/api/agent/ingest"] == [400, "INVALID_PAYLOAD"]
    assert deep["/api/agent/retrieve"] == [400, "INVALID_REQUEST"]
    assert deep["mcpDeep"][1] == -32700 and deep["mcpNaNId"][0] == 400 and deep["mcp1e400Id"][0] == 400
    assert deep["mcpBatch"][0] == 400 and isinstance(deep["mcpBatch"][1], int)  # the MCP SDK takes no batches
    assert isinstance(deep["mcpNaNId"][1], int) and isinstance(deep["mcp1e400Id"][1], int)  # strict JSON-RPC errors

    assert report["garbage"]["stderrGrowthBytes"] < 20_000  # rate-limited, not one line per request

    valid = report["validClient"]
    assert valid["calls"] > 50 and valid["failed"] == 0, valid
    assert valid["maxSec"] < 1.0, valid
