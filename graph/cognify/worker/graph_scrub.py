"""`python -m graph.cognify.worker.graph_scrub --workspace DIR`: rewrite cognee's local files after a
forget, so no freed page still holds a forgotten memory (INGEST_CONTRACT.md 20.4).

Run by the owner after the cognee worker that deleted the data exited (its databases closed, their
locks released) and before the next worker starts. cognee's graph database (Ladybug) has no vacuum:
it is exported and imported into a new file that replaces the old one. cognee's SQLite files get
secure_delete, VACUUM and a truncated WAL. Prints one JSON line with what it did.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

from graph.core.workspace import WorkspacePaths, resolve_workspace

SQLITE_HEADER = b"SQLite format 3\x00"
GRAPH_SUFFIX = "_ladybug"
"""cognee's Ladybug graph file (cognee_graph_ladybug) under its databases folder."""


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def vacuum_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def rewrite_graph(path: Path) -> None:
    """Export the graph and import it into a new file that replaces this one (same nodes, edges and
    properties; none of the freed pages)."""
    import ladybug

    export = path.with_name(f".{path.name}.export-{os.getpid()}")
    fresh = path.with_name(f".{path.name}.rewrite-{os.getpid()}")
    shutil.rmtree(export, ignore_errors=True)
    try:
        db = ladybug.Database(str(path))
        conn = ladybug.Connection(db)
        conn.execute(f"EXPORT DATABASE '{export}'")
        conn.close()
        db.close()
        db = ladybug.Database(str(fresh))
        conn = ladybug.Connection(db)
        conn.execute(f"IMPORT DATABASE '{export}'")
        conn.close()
        db.close()
        os.replace(fresh, path)
        for leftover in path.parent.glob(f"{path.name}.*"):  # the old file's WAL or shadow pages
            leftover.unlink()
    finally:
        shutil.rmtree(export, ignore_errors=True)
        for partial in path.parent.glob(f".{path.name}.rewrite-*"):
            partial.unlink()


def scrub(paths: WorkspacePaths) -> dict[str, object]:
    started = time.perf_counter()
    graphs = sqlite = 0
    for root in (paths.cognee_system, paths.cognee_data):
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.name.startswith("."):
                continue
            if path.name.endswith(GRAPH_SUFFIX):
                rewrite_graph(path)
                graphs += 1
            elif not path.name.endswith(("-wal", "-shm", ".wal", ".lock")) and _is_sqlite(path):
                vacuum_sqlite(path)
                sqlite += 1
    return {"graphFiles": graphs, "sqliteFiles": sqlite, "scrubSec": round(time.perf_counter() - started, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.cognify.worker.graph_scrub")
    parser.add_argument("--workspace", required=True)
    args = parser.parse_args()
    os.umask(0o077)
    print(json.dumps(scrub(resolve_workspace(args.workspace))), flush=True)


if __name__ == "__main__":
    main()
