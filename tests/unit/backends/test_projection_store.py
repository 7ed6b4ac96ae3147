"""The projection's two homes behave alike: a file under .flowbaby/ and, on the team backend, one
row of the namespace's schema (migration 7). A save names the version it folded into and is
refused if another worker saved since; readers (the graph lane) reload when the version moves."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import psycopg
import pytest

from graph.backends.backend import Backend
from graph.backends.memory_store import MemoryStoreBackend
from graph.backends.projection import ProjectionSource, load_graph
from graph.backends.team import projection as team_projection
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.projection import PostgresProjection
from graph.backends.team.schema import schema_name
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.graph_projection import LaneRecords, projection_data
from graph.core.workspace import WorkspacePaths, resolve_workspace
from graph.search.graph_lane import GraphLane
from tests.support.postgres import PostgresServer


def _graph(*entities: str) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    graph.add_node("memory:m1", kind="memory", name="m1")
    for entity in entities:
        graph.add_node(entity, kind="entity", name=entity, entity_type="component", sources=["m1"])
        graph.add_edge("memory:m1", entity, key="mentions", relation="mentions")
    return graph


def test_saves_are_versioned_and_a_stale_save_is_refused(
    open_store: Callable[[], MemoryStoreBackend], make_backend: Callable[[WorkspacePaths], Backend], tmp_path: Path
) -> None:
    open_store()  # the namespace's schema, migrated (the team backend's table is migration 7)
    paths = resolve_workspace(str(tmp_path))
    backend = make_backend(paths)
    writer, other = backend.projection(), backend.projection()  # two workers
    reader = backend.projection()
    try:
        assert writer.stamp() is None and reader.read() == (None, {})
        first = writer.save(_graph("Redis"), expected=None)
        assert first is not None and reader.stamp() == first
        assert set(load_graph(reader).nodes) == {"memory:m1", "Redis"}
        second = other.save(_graph("Redis", "Kafka"), expected=first)
        assert second is not None and second != first
        assert writer.save(_graph("Postgres"), expected=first) is None  # folded into a stale version
        assert set(load_graph(reader).nodes) == {"memory:m1", "Redis", "Kafka"}
    finally:
        for source in (writer, other, reader):
            source.close()


def test_the_graph_lane_reloads_when_another_process_saves(
    open_store: Callable[[], MemoryStoreBackend], make_backend: Callable[[WorkspacePaths], Backend], tmp_path: Path
) -> None:
    open_store()
    paths = resolve_workspace(str(tmp_path))
    worker, owner = make_backend(paths).projection(), make_backend(paths).projection()
    lane = GraphLane(owner)
    try:
        lane.refresh()
        assert lane.neighbourhood("m1", 1)["entities"] == []
        stamp = worker.save(_graph("Redis"), expected=None)
        assert [e["name"] for e in lane.neighbourhood("m1", 1)["entities"]] == ["Redis"]
        assert worker.save(_graph("Redis", "Kafka"), expected=stamp) is not None
        assert sorted(e["name"] for e in lane.neighbourhood("m1", 1)["entities"]) == ["Kafka", "Redis"]
    finally:
        worker.close()
        owner.close()


class _Refusing:
    """The owner's source, whose reads raise while `error` is set (as reading a value over Postgres's 1 GB did)."""

    def __init__(self, inner: ProjectionSource) -> None:
        self.inner = inner
        self.error: Exception | None = None
        self.reads = 0

    def stamp(self) -> object | None:
        return self.inner.stamp()

    def read_lane(self) -> tuple[object | None, LaneRecords | None]:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return self.inner.read_lane()


def test_a_projection_read_that_raises_keeps_the_last_graph_and_is_not_retried_until_a_new_save(
    open_store: Callable[[], MemoryStoreBackend], make_backend: Callable[[WorkspacePaths], Backend], tmp_path: Path
) -> None:
    """Before, the exception reached every retrieval (FLOWBABY_ERROR) for as long as that version stood."""
    open_store()
    paths = resolve_workspace(str(tmp_path))
    worker, owner = make_backend(paths).projection(), make_backend(paths).projection()
    source = _Refusing(owner)
    lane = GraphLane(source)  # type: ignore[arg-type]
    try:
        stamp = worker.save(_graph("Redis"), expected=None)
        assert [e["name"] for e in lane.neighbourhood("m1", 1)["entities"]] == ["Redis"]
        source.error = psycopg.errors.ProgramLimitExceeded("invalid memory alloc request size 1258291203")
        stamp = worker.save(_graph("Redis", "Kafka"), expected=stamp)
        reads = source.reads
        for _ in range(3):
            assert [e["name"] for e in lane.neighbourhood("m1", 1)["entities"]] == ["Redis"]  # the last one read
        assert lane.damaged and source.reads == reads + 1  # that version is not read again at every query
        source.error = FlowbabyError(ErrorCode.DATABASE_UNAVAILABLE, "The team database does not answer")
        stamp = worker.save(_graph("Redis", "Kafka", "Postgres"), expected=stamp)
        with pytest.raises(FlowbabyError):  # an outage still answers with its own code
            lane.refresh()
        source.error = None
        assert sorted(e["name"] for e in lane.neighbourhood("m1", 1)["entities"]) == ["Kafka", "Postgres", "Redis"]
        assert not lane.damaged
    finally:
        worker.close()
        owner.close()


def test_the_team_row_is_compressed_and_a_plain_or_broken_row_still_reads(postgres: PostgresServer) -> None:
    """Compressed (a projection's JSON past 512 MB could not be read back as text, section 15.12); rows
    written plain before are read as they are, and a row that is neither reads as no projection."""
    PostgresMemoryStore(postgres.url(), "rowformat", owner=False).close()  # the schema, migrated
    graph = _graph(*(f"component-{n}" for n in range(200)))
    projection = PostgresProjection(postgres.url(), "rowformat")
    table = f'"{schema_name("rowformat")}".graph_projection'
    try:
        assert projection.save(graph, expected=None) == 1
        with psycopg.connect(postgres.url()) as conn:
            [stored] = conn.execute(f"SELECT data FROM {table}".encode()).fetchone() or [b""]
        plain = json.dumps(projection_data(graph)).encode()
        assert zlib.decompress(stored) == plain and len(stored) < len(plain) / 4
        assert projection.read() == (1, projection_data(graph))

        for row, expected in ((plain, projection_data(graph)), (b"\x00 not zlib", None)):
            with psycopg.connect(postgres.url()) as conn:
                conn.execute(f"UPDATE {table} SET data = %s, version = version + 1".encode(), (row,))
            assert projection.read()[1] == expected
    finally:
        projection.close()


def test_the_team_lane_is_read_from_its_column_and_a_save_that_does_not_write_it_clears_it(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 10: an owner reads the lane's records, not the projection (whose parse peaked at 13 GB at
    1M memories), and sees the same graph; a write of the projection alone (a flowbaby from before the
    migration) clears the lane, so the next read is the projection's, never a lane of another save."""
    from tests.unit.core.test_projection import _lane_state, _saved_workspace

    file_source, memories = _saved_workspace(tmp_path)
    file_source.lane_path.unlink()  # the embedded lane, read from the projection itself: the expected state
    expected_lane = GraphLane(file_source)
    expected_lane.refresh()
    expected = _lane_state(expected_lane, memories)
    assert expected[0] and expected[2] and expected[3][0]  # entities, hops and relations to compare
    PostgresMemoryStore(postgres.url(), "lanecolumn", owner=False).close()  # the schema, migrated
    table = f'"{schema_name("lanecolumn")}".graph_projection'
    team = PostgresProjection(postgres.url(), "lanecolumn")
    try:
        stamp = team.save(load_graph(file_source), expected=None)
        assert stamp == 1 and team.save(load_graph(file_source), expected=stamp) == 2
        with psycopg.connect(postgres.url()) as conn:
            row = conn.execute(f"SELECT version, lane_version, lane, data FROM {table}".encode()).fetchone()
        assert row is not None and row[0] == row[1] == 2 and 0 < len(row[2]) < len(row[3])

        def unread(raw: bytes) -> None:
            raise AssertionError("the projection itself was parsed")

        with monkeypatch.context() as patched:
            patched.setattr("graph.backends.team.projection.parse_projection_bytes", unread)
            lane = GraphLane(team)
            lane.refresh()
            assert _lane_state(lane, memories) == expected

        graph = load_graph(file_source)
        graph.remove_nodes_from([n for n, d in graph.nodes(data=True) if d.get("name") == "redis"])
        with psycopg.connect(postgres.url()) as conn:  # as migration 7's save wrote it: no lane
            conn.execute(
                f"UPDATE {table} SET version = version + 1, data = %s".encode(),
                (zlib.compress(json.dumps(projection_data(graph)).encode()),),
            )
            assert conn.execute(f"SELECT lane, lane_version FROM {table}".encode()).fetchone() == (None, None)
        lane.refresh()
        assert lane.query_entities("redis") == {} and lane.query_entities("postgres kafka grpc")
        with psycopg.connect(postgres.url()) as conn:  # that read wrote the lane for the row's version
            row = conn.execute(f"SELECT version, lane_version, lane FROM {table}".encode()).fetchone()
        assert row is not None and row[0] == row[1] == 3 and row[2]
        with monkeypatch.context() as patched:
            patched.setattr("graph.backends.team.projection.parse_projection_bytes", unread)
            again = GraphLane(team)
            again.refresh()
            assert _lane_state(again, memories) == _lane_state(lane, memories)

        # A save between a server's parse and its write of the lane: the row keeps the save's lane.
        with psycopg.connect(postgres.url()) as conn:
            conn.execute(f"UPDATE {table} SET version = version + 1, lane = NULL".encode())
        graph.remove_nodes_from([n for n, d in graph.nodes(data=True) if d.get("name") == "kafka"])
        original, saved = team_projection.lane_records, list[int | None]()

        def save_meanwhile(data: dict[str, Any] | None) -> Any:
            if not saved:
                saved.append(None)
                saved[0] = team.save(graph, expected=None)
            return original(data)

        with monkeypatch.context() as patched:
            patched.setattr(team_projection, "lane_records", save_meanwhile)
            version, _ = team.read_lane()
        with psycopg.connect(postgres.url()) as conn:
            row = conn.execute(f"SELECT version, lane_version, lane FROM {table}".encode()).fetchone()
        assert version == 4 and saved == [5] and row is not None and row[0] == row[1] == 5
        assert b'"kafka"' not in zlib.decompress(row[2])
    finally:
        team.close()
