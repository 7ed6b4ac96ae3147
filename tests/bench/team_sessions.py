"""Session memory storage on the team backend against the embedded one, in the same run: the
3,000-message OpenCode session of tests/bench/sessions.py imported, updated and searched once with
SQLite + LanceDB and once with the namespace's tables on a real Postgres. The encoder is a hashed
bag of words (384-d, unit length), not MiniLM: the model's cost is the same on both backends, so
this measures what the backend adds (the embedded bench with MiniLM: tests/bench/sessions.py).

    .venv/bin/python -m tests.bench.team_sessions [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from graph.backends.backend import DATABASE_URL_ENV, NAMESPACE_ENV
from graph.sessions.config import SessionSettings
from graph.sessions.index import SessionIndex, sources_from
from tests.bench.sessions import MESSAGES, _lines, build_session
from tests.support.fakes import HashEncoder
from tests.support.postgres import database_url
from tests.support.session_fixtures import OpenCodeDb, text


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 2), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def run(root: Path, lines: list[str]) -> dict[str, Any]:
    rng = random.Random(11)
    workspace = root / "ws"
    workspace.mkdir()
    db = OpenCodeDb(root / "opencode")
    db.session("ses_bench", workspace, "Bench session")
    build_session(db, "ses_bench", MESSAGES, lines, rng)
    settings = SessionSettings(opencode_dir=root / "opencode", claude_dir=root / "no-claude", watch=False)
    index = SessionIndex(
        workspace, workspace / ".flowbaby" / "sessions", HashEncoder(), settings, sources_from(settings)
    )
    info = index.find("ses_bench")[0]
    began = time.perf_counter()
    imported = index.import_session(info)
    import_sec = time.perf_counter() - began
    for n in range(10):
        db.turn("ses_bench", "user" if n % 2 == 0 else "assistant", text(rng.choice(lines)))
    began = time.perf_counter()
    index.update_session(index.find("ses_bench")[0])
    update_sec = time.perf_counter() - began
    queries = [rng.choice(lines)[:80] for _ in range(200)]
    search, context = [], []
    for query in queries:
        began = time.perf_counter()
        index.search([info.key], query, 20)
        search.append((time.perf_counter() - began) * 1000)
    for query in queries[:50]:
        began = time.perf_counter()
        index.context(info.key, query, 2, 5)
        context.append((time.perf_counter() - began) * 1000)
    status = index.status(index.find("ses_bench")[0])
    index.close()
    db.close()
    return {
        "chunks": imported["chunks"],
        "importSec (hash encoder)": round(import_sec, 2),
        "updateSec": round(update_sec, 3),
        "searchMs": _ms(search),
        "contextMs": _ms(context),
        "status": status["status"],
        "load1m": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="")
    parser.add_argument("--locomo", type=Path, default=Path("/work/shared/bench/locomo-dev.json"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = _lines(args.locomo if args.locomo.is_file() else None, 11)
    report: dict[str, Any] = {}
    with database_url(args.url) as url:
        try:
            for backend in ("embedded", "postgres"):
                if backend == "postgres":
                    os.environ[DATABASE_URL_ENV] = url
                    os.environ[NAMESPACE_ENV] = f"s{uuid.uuid4().hex[:12]}"
                with tempfile.TemporaryDirectory() as tmp:
                    report[backend] = run(Path(tmp), lines)
                print(backend, json.dumps(report[backend]), flush=True)
        finally:
            os.environ.pop(DATABASE_URL_ENV, None)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
