"""The graph projection in the namespace's schema (`flowbaby_<namespace>.graph_projection`,
migration 7): one row holding the serialized projection and a version that counts saves, and
(migration 10) the graph lane's records of it, as the embedded backend keeps lane.json beside its file.

Any server's worker saves it; every owner on the namespace reloads it when the version moves
(a one-row primary-key read per check), so a graph built on one machine serves retrieval on all.
A save names the version it folded into: if another worker saved in between, nothing is written
and the worker rebuilds from cognee's graph, which holds both batches (cognee keeps it in Postgres).

The row holds the projection's JSON zlib-compressed (level 1, ~6x) and is read in binary: Postgres
refuses a value over 1 GB, and a bytea sent as text doubles into hex, so plain JSON read as text
failed from 512 MB (about 140k-230k memories); compressed and binary, the 1 GB bound is ~6 GB of
JSON. A row written plain (before compression) is still read.

The lane column is what an owner's graph lane reads (graph.core.graph_projection.dump_lane, zlib too):
at 1M memories the whole projection's parse peaked at 13 GB in the serving process. A save writes both
columns in one statement, with `lane_version` set to the row's new version; the row's trigger clears
the lane whenever a write leaves `lane_version` behind `version` (a flowbaby from before migration 10
saving on the same namespace), so a lane never describes another projection than the one beside it,
nor outlives a forget's rewrite.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import zlib
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from graph.backends.team.pool import acquire_pool, release_pool
from graph.backends.team.schema import configure_connection, connect, describe_url, schema_name
from graph.core.contract import FlowbabyError
from graph.core.graph_projection import (
    LaneRecords,
    dump_lane,
    lane_records,
    parse_lane,
    parse_projection_bytes,
    projection_data,
)

if TYPE_CHECKING:  # networkx only where a graph is built or inspected (graph.core.graph_projection)
    import networkx as nx


COMPRESSION_LEVEL = 1
"""zlib level of the stored row: at 100k memories 209 MB of JSON -> 35 MB in 1.6 CPU-s (level 6: 31 MB
in 4.2 CPU-s), inflated in 0.8 s against 2.2 s to parse the JSON."""

LANE_STAMP = "row"
"""dump_lane's stamp in the lane column: the row's trigger, not the JSON, ties the lane to its version."""


def unpack(stored: bytes) -> bytes:
    """The projection JSON of a stored row: inflated, or as it is for a row written uncompressed
    (JSON starts with `{`, a zlib stream never does). A row that is neither reads as no projection,
    as an unreadable file does (graph.core.graph_projection.read_projection_json)."""
    if stored[:1] == b"{":
        return stored
    try:
        return zlib.decompress(stored)
    except zlib.error:
        return b""


def _packed_lane(records: LaneRecords) -> bytes:
    """The lane column's bytes: lane.json's JSON, compressed as the projection is."""
    return zlib.compress(dump_lane(LANE_STAMP, records), COMPRESSION_LEVEL)


class PostgresProjection:
    """The projection's row, through the process's connection pool for the namespace (graph.backends.team.pool):
    a database that went away is DATABASE_UNAVAILABLE here too, and a restart is recovered from."""

    def __init__(self, url: str, namespace: str) -> None:
        self._url, self._namespace = url, namespace
        self._table = sql.Identifier(schema_name(namespace), "graph_projection")
        self._pool = acquire_pool(url, namespace, describe_url(url)[0], configure_connection(namespace), connect)

    def stamp(self) -> int | None:
        with self._pool.connection() as conn:
            found = conn.execute(sql.SQL("SELECT version FROM {} WHERE id = 1").format(self._table)).fetchone()
        return int(found["version"]) if found else None

    def read(self) -> tuple[int | None, dict[str, Any] | None]:
        with self._pool.connection() as conn:
            query = sql.SQL("SELECT version, data FROM {} WHERE id = 1").format(self._table)
            found = conn.execute(query, binary=True).fetchone()
        if found is None:
            return None, {}
        return int(found["version"]), parse_projection_bytes(unpack(bytes(found["data"])))

    def read_lane(self) -> tuple[int | None, LaneRecords | None]:
        """The lane column when the row has one for its version, else the lane's records of the projection
        itself (a row saved before migration 10, or by a flowbaby from before it, or a damaged lane), which
        is then written into the row for that version."""
        with self._pool.connection() as conn:
            query = sql.SQL(
                "SELECT version, CASE WHEN lane_version = version THEN lane END AS lane FROM {} WHERE id = 1"
            ).format(self._table)
            found = conn.execute(query, binary=True).fetchone()
        if found is None:
            return None, lane_records({})
        if found["lane"] is not None:
            records = parse_lane(unpack(bytes(found["lane"])), LANE_STAMP)
            if records is not None:
                return int(found["version"]), records
        stamp, data = self.read()
        records = lane_records(data)
        if stamp is not None and records is not None:
            self._write_missing_lane(stamp, records)
        return stamp, records

    def _write_missing_lane(self, version: int, records: LaneRecords) -> None:
        """The lane column for the version just parsed, so that no server parses that projection again;
        written only while the row is still at that version (one statement), so never beside another
        save's projection. A failure leaves the row as it was: the next read parses it again."""
        lane = _packed_lane(records)
        query = sql.SQL("UPDATE {} SET lane = %s, lane_version = version WHERE id = 1 AND version = %s").format(
            self._table
        )
        with contextlib.suppress(psycopg.Error, FlowbabyError), self._pool.connection() as conn:
            conn.execute(query, (lane, version))

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> int | None:
        projection = projection_data(graph)
        data = zlib.compress(json.dumps(projection).encode("utf-8"), COMPRESSION_LEVEL)
        records = lane_records(projection)
        lane = None if records is None else _packed_lane(records)
        by = f"{socket.gethostname()} pid {os.getpid()}"
        upsert = sql.SQL(
            "INSERT INTO {table} AS p (id, version, saved_by, data, lane, lane_version) VALUES (1, 1, %s, %s, %s, 1) "
            "ON CONFLICT (id) DO UPDATE SET version = p.version + 1, lane_version = p.version + 1, saved_at = now(), "
            "saved_by = EXCLUDED.saved_by, data = EXCLUDED.data, lane = EXCLUDED.lane RETURNING version"
        )
        with self._pool.connection() as conn:
            if expected is None:
                row = conn.execute(upsert.format(table=self._table), (by, data, lane)).fetchone()
            else:
                query = sql.SQL(
                    "UPDATE {} SET version = version + 1, lane_version = version + 1, saved_at = now(), saved_by = %s, "
                    "data = %s, lane = %s WHERE id = 1 AND version = %s RETURNING version"
                ).format(self._table)
                row = conn.execute(query, (by, data, lane, expected)).fetchone()
        return int(row["version"]) if row else None

    def close(self) -> None:
        release_pool(self._url, self._namespace)
