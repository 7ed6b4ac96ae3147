"""Session memory on the team backend against the embedded one, in the same run: the sessions
bench (tests/bench/sessions.py: a 3,000-message OpenCode session imported, updated and searched)
once with SQLite + LanceDB, once with the namespace's tables on a real Postgres.

    .venv/bin/python -m tests.bench.team_sessions [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from graph.core.storage import DATABASE_URL_ENV, NAMESPACE_ENV
from tests.bench.sessions import run_sessions
from tests.postgres import PostgresServer

KEEP = (
    "chunks",
    "importSec",
    "updateSec",
    "searchP50Ms",
    "searchP95Ms",
    "searchWithoutEmbeddingP50Ms",
    "searchWithoutEmbeddingP95Ms",
    "currentSessionP95Ms",
    "singleMentionFactRank",
    "loadAverage1m",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="")
    parser.add_argument("--locomo", type=Path, default=Path("/work/shared/bench/locomo-dev.json"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    server = None if args.url else PostgresServer.start()
    url = args.url or server.url()  # type: ignore[union-attr]
    report: dict[str, Any] = {}
    try:
        for backend in ("embedded", "postgres"):
            if backend == "postgres":
                os.environ[DATABASE_URL_ENV] = url
                os.environ[NAMESPACE_ENV] = f"s{uuid.uuid4().hex[:12]}"
            with tempfile.TemporaryDirectory() as tmp:
                result = run_sessions(Path(tmp), args.locomo if args.locomo.is_file() else None)
            report[backend] = {k: result[k] for k in KEEP}
            print(backend, json.dumps(report[backend]), flush=True)
    finally:
        os.environ.pop(DATABASE_URL_ENV, None)
        if server is not None:
            server.remove()
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
