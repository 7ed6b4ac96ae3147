"""The team backend's projection row at scale: the row as it was stored and read before (plain JSON,
read as text) against now (zlib, read in binary), and how large a bytea Postgres returns each way.

    python -m tests.bench.team_projection PROJECTION_JSON [--rounds 2] [--probe-mb 300,600]

PROJECTION_JSON: a workspace's `.flowbaby/graph/projection.json` (e.g. one built by the latency
bench's corpus at 100k memories). Each round saves and reads the row both ways on a durable embedded
Postgres and prints wall and CPU seconds and the row's bytes; `--probe-mb` writes random bytea values
of those sizes and reads each back as text and in binary (a text read over 512 MB fails).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.projection import PostgresProjection
from graph.backends.team.schema import schema_name
from graph.core.graph_projection import dump_projection, load_projection, parse_projection_bytes
from tests.support.postgres import PostgresServer

NAMESPACE = "projectionbench"


def _timed(step: Callable[[], Any]) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return {"wallSec": round(time.perf_counter() - wall, 2), "cpuSec": round(time.process_time() - cpu, 2)}


def _row_bytes(url: str, table: str) -> dict[str, float]:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT octet_length(data), pg_column_size(data) FROM {table}".encode()).fetchone()
    assert row is not None
    return {"rowMB": round(row[0] / 2**20, 1), "storedMB": round(row[1] / 2**20, 1)}


def rounds(url: str, projection: Path, count: int) -> list[dict[str, Any]]:
    graph = load_projection(projection)
    PostgresMemoryStore(url, NAMESPACE, owner=False).close()  # the schema, migrated
    table = f'"{schema_name(NAMESPACE)}".graph_projection'
    upsert = (
        f"INSERT INTO {table} (id, version, saved_by, data) VALUES (1, 1, 'bench', %s) "
        f"ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, version = {table}.version + 1"
    ).encode()

    def save_plain() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(upsert, (dump_projection(graph),))

    def read_plain() -> None:
        with psycopg.connect(url) as conn:
            row = conn.execute(f"SELECT data FROM {table} WHERE id = 1".encode()).fetchone()
        assert row is not None and parse_projection_bytes(bytes(row[0])) is not None

    shared = PostgresProjection(url, NAMESPACE)
    out = []
    try:
        for _ in range(count):
            before = {"save": _timed(save_plain), "read": _timed(read_plain), **_row_bytes(url, table)}
            now = {
                "save": _timed(lambda: shared.save(graph, None)),
                "read": _timed(shared.read),
                **_row_bytes(url, table),
            }
            out.append({"plainJsonReadAsText": before, "zlibReadInBinary": now})
    finally:
        shared.close()
    return out


def probe(url: str, sizes_mb: list[int]) -> list[dict[str, Any]]:
    """Random bytea values of each size, read back as text (hex, twice the size) and in binary."""
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bytea_probe (id INTEGER PRIMARY KEY, data BYTEA)")
        for mb in sizes_mb:
            conn.execute(
                "INSERT INTO bytea_probe VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data",
                (os.urandom(1024) * (mb * 1024),),
            )
            result: dict[str, Any] = {"mb": mb}
            for mode, binary in (("text", False), ("binary", True)):
                began = time.perf_counter()
                try:
                    row = conn.execute("SELECT data FROM bytea_probe WHERE id = 1", binary=binary).fetchone()
                    assert row is not None and len(row[0]) == mb * 2**20
                    result[mode] = f"read in {time.perf_counter() - began:.1f} s"
                except psycopg.Error as exc:
                    result[mode] = f"failed: {type(exc).__name__}: {str(exc).strip()[:120]}"
            out.append(result)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.team_projection")
    parser.add_argument("projection", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--probe-mb", default="", help="comma-separated bytea sizes to probe, e.g. 300,600")
    args = parser.parse_args()
    server = PostgresServer.start(durable=True)
    try:
        report: dict[str, Any] = {"rounds": rounds(server.url(), args.projection, args.rounds)}
        if args.probe_mb:
            report["byteaProbe"] = probe(server.url(), [int(mb) for mb in args.probe_mb.split(",")])
    finally:
        server.remove()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
