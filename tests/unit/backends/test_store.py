"""The store over both backends (tests/unit/conftest.py: a real SQLite file in tmp_path, a real
Postgres namespace): versions and supersession, the ledger's states and transitions, repair and
recovery of interrupted operations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from graph.backends.memory_store import MemoryStoreBackend
from graph.core.contract import MemoryStatus
from graph.core.jsonwire import loads_stored
from graph.core.memories import BacklogFull, memory_uuid, new_operation_id
from tests.support.fakes import memory


def stage(store: MemoryStoreBackend, topic_id: str, status: MemoryStatus = MemoryStatus.ACTIVE) -> tuple[str, str]:
    """Stage a version of the topic; returns (memory id, operation id)."""
    op = new_operation_id()
    staged = store.stage(memory("", topic_id=topic_id, status=status), op)
    return staged.memory_id, op


# -- versions ----------------------------------------------------------------------------
def test_a_new_version_supersedes_the_old_one(store: MemoryStoreBackend) -> None:
    first, _ = stage(store, "cache", MemoryStatus.DECISION_RECORD)
    other, _ = stage(store, "other")
    second, _ = stage(store, "cache")
    assert (first, second) == (memory_uuid("cache", 1), memory_uuid("cache", 2))
    assert store.stage(memory("", topic_id="cache"), new_operation_id()).supersedes == second
    versions = store.topic_versions("cache")
    assert [(m.version, m.status) for m in versions] == [
        (1, MemoryStatus.SUPERSEDED),
        (2, MemoryStatus.SUPERSEDED),
        (3, MemoryStatus.ACTIVE),
    ]
    assert store.get_memories([other])[0].status is MemoryStatus.ACTIVE  # another topic is untouched


def test_an_agent_marked_superseded_memory_stays_stored(store: MemoryStoreBackend) -> None:
    marked, op = stage(store, "old-plan", MemoryStatus.SUPERSEDED)
    [stored] = store.get_memories([marked])
    assert (stored.status, stored.version, stored.operation_id) == (MemoryStatus.SUPERSEDED, 1, op)
    assert [m.memory_id for m in store.iter_memories()] == [marked]
    assert store.operation(op).status == "pending"  # type: ignore[union-attr]  # its graph is still built


def test_the_store_survives_a_reopen(open_store: Callable[[], MemoryStoreBackend]) -> None:
    first = open_store()
    memory_id, op = stage(first, "cache")
    first.close()
    again = open_store()
    assert [m.memory_id for m in again.iter_memories()] == [memory_id]
    assert again.operation(op).memoryIds == [memory_id]  # type: ignore[union-attr]


def test_every_list_field_reads_back_as_stored_whatever_its_characters(store: MemoryStoreBackend) -> None:
    """iter_memories (the warm-up's fast read) and get_memories give back each list field's text exactly."""
    odd = ["emoji \U0001f600 and \u00e9", 'control \x01 \x7f tab \t quote " back \\ slash', "rtl \u202e \u200b", ""]
    staged = store.stage(
        memory("", topic_id="odd", decisions=odd, rationale=odd[::-1], next_steps=["\u2028 line sep"]),
        new_operation_id(),
    )
    [read] = [m for m in store.iter_memories() if m.memory_id == staged.memory_id]
    assert (read.decisions, read.rationale, read.next_steps) == (odd, odd[::-1], ["\u2028 line sep"])
    assert store.get_memories([staged.memory_id])[0] == read


def test_stored_json_reads_what_json_writes() -> None:
    """loads_stored takes orjson's path and json's where orjson refuses (a lone surrogate escape)."""
    for value in (["\ud800 lone"], {"a": ["\U0001f600", 1.5, None, True]}, [], "x" * 10_000):
        text = json.dumps(value)
        assert loads_stored(text) == loads_stored(text.encode()) == value


# -- ledger ------------------------------------------------------------------------------
def test_staging_queues_one_pending_operation(store: MemoryStoreBackend) -> None:
    memory_id, op = stage(store, "cache")
    status = store.operation(op)
    assert status is not None
    assert (status.status, status.memoryIds, status.topicIds, status.attempts) == ("pending", [memory_id], ["cache"], 0)
    assert status.startedAt is None and status.finishedAt is None
    assert store.count_operations() == 1
    assert store.counts() == {"memories": 1, "graph_pending": 1}


def test_running_requeue_and_refund(store: MemoryStoreBackend) -> None:
    _, op = stage(store, "cache")
    store.mark_running([op])
    running = store.operation(op)
    assert running is not None and (running.status, running.attempts) == ("running", 1) and running.startedAt
    store.requeue([op])  # after a crash the attempt counts
    after_crash = store.operation(op)
    assert after_crash is not None and (after_crash.status, after_crash.attempts) == ("pending", 1)
    assert after_crash.startedAt is None
    store.mark_running([op])
    store.requeue([op], refund_attempt=True)  # parked at shutdown it does not
    assert store.operation(op).attempts == 1  # type: ignore[union-attr]
    assert store.count_operations() == 1


def test_finishing_moves_the_graph_state(store: MemoryStoreBackend) -> None:
    done, done_op = stage(store, "a")
    lost, lost_op = stage(store, "b")
    store.mark_running([done_op, lost_op])
    store.finish([done_op], "completed", metrics={"llmCalls": 2})
    store.finish([lost_op], "failed", error_code="LLM_ERROR", error="no model")
    completed, failed = store.operation(done_op), store.operation(lost_op)
    assert completed is not None and failed is not None
    assert (completed.status, completed.metrics, completed.errorCode) == ("completed", {"llmCalls": 2}, None)
    assert (failed.status, failed.errorCode, failed.error) == ("failed", "LLM_ERROR", "no model")
    assert completed.finishedAt and failed.finishedAt
    assert [m.graph_state for m in store.get_memories([done, lost])] == ["indexed", "failed"]
    assert store.count_operations() == 0
    assert store.memories_without_graph() == [lost]


def test_a_failed_operation_never_unbuilds_an_indexed_memory(store: MemoryStoreBackend) -> None:
    built, op = stage(store, "a")
    store.set_graph_state([built], "indexed")
    store.finish([op], "failed", error_code="LLM_ERROR", error="later memories failed")
    assert store.get_memories([built])[0].graph_state == "indexed"
    assert store.memories_without_graph() == []


def test_repair_queues_one_operation_for_every_memory_without_graph(store: MemoryStoreBackend) -> None:
    ids, ops = zip(*(stage(store, t) for t in ("a", "b", "c")), strict=True)
    store.finish([ops[0], ops[2]], "failed", error_code="LLM_TIMEOUT", error="slow")
    store.finish([ops[1]], "completed")
    missing = store.memories_without_graph()
    assert missing == [ids[0], ids[2]]
    repair = store.queue_operation(missing)
    status = store.operation(repair)
    assert status is not None and (status.status, status.memoryIds, status.topicIds) == ("pending", missing, ["a", "c"])
    assert store.memories_without_graph() == []  # an unfinished operation covers them now
    assert [m.operation_id for m in store.get_memories(missing)] == [repair, repair]


def test_recovery_requeues_running_operations_under_their_own_ids(store: MemoryStoreBackend) -> None:
    running, running_op = stage(store, "a")
    _, waiting_op = stage(store, "b")
    store.mark_running([running_op])
    assert store.recover_interrupted() == [running_op]
    requeued = store.operation(running_op)  # the id the agent holds: no crash of its own, no attempt spent
    assert requeued is not None and (requeued.status, requeued.memoryIds, requeued.attempts) == (
        "pending",
        [running],
        0,
    )
    assert requeued.errorCode is None and requeued.finishedAt is None
    assert store.operation(waiting_op).status == "pending"  # type: ignore[union-attr]  # untouched
    [moved] = store.get_memories([running])
    assert (moved.operation_id, moved.graph_state) == (running_op, "pending")
    assert store.recover_interrupted() == []  # nothing left running


# -- claims (the manager's way to start operations) ------------------------------------------
def test_claim_starts_the_oldest_pending_operations_and_counts_the_attempt(store: MemoryStoreBackend) -> None:
    ops = [stage(store, topic)[1] for topic in ("a", "b", "c")]
    claimed = store.claim(2, lease_sec=30)
    assert [(op.operationId, op.status, op.attempts, op.topicIds) for op in claimed] == [
        (ops[0], "running", 1, ["a"]),
        (ops[1], "running", 1, ["b"]),
    ]
    assert store.renew(ops[:2], lease_sec=30) == ops[:2]
    store.finish(ops[:2], "completed")
    assert [op.operationId for op in store.claim(2, lease_sec=30)] == [ops[2]]
    assert store.claim(2, lease_sec=30) == []


def test_the_store_refuses_to_stage_beyond_its_capacity(store: MemoryStoreBackend) -> None:
    for topic in ("a", "b"):
        store.stage(memory("", topic_id=topic), new_operation_id(), capacity=2)
    with pytest.raises(BacklogFull):
        store.stage(memory("", topic_id="c"), new_operation_id(), capacity=2)
    assert store.counts()["memories"] == 2 and store.count_operations() == 2


def test_finishing_an_operation_finds_its_memories_by_index(tmp_path: Path) -> None:
    """`finish` updates the memories of one operation: without an index on operation_id that is a
    scan of every memory per finished operation (half a 100k staging undone after 20 minutes)."""
    from graph.backends.embedded.memory_store import MemoryStore

    store = MemoryStore(tmp_path / "memories.sqlite")
    try:
        plan = store._conn.execute(
            "EXPLAIN QUERY PLAN UPDATE memories SET graph_state='indexed'"
            " WHERE operation_id=? AND graph_state!='indexed'",
            ("op_x",),
        ).fetchall()
    finally:
        store.close()
    assert any("memories_operation" in str(tuple(row)) for row in plan), [tuple(row) for row in plan]


def test_iter_memories_reads_every_field_as_stored(store: MemoryStoreBackend) -> None:
    """The start-up read (SQLite: tuples, the list fields in one JSON parse) gives what a row-by-row
    read gives, field for field, in staging order."""
    ids = []
    for n, status in enumerate((MemoryStatus.DECISION_RECORD, MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)):
        staged = store.stage(
            memory(
                "",
                topic_id=f"topic-{n}",
                status=status,
                decisions=[f'décision {n} \u2019quoted\u2019 "x"', "second, with [brackets]"],
                rationale=["why"] * n,
                open_questions=["é?"],
                next_steps=[],
                references=[f"src/file_{n}.py", "PAW-1432"],
                time_scope="2025-Q1",
                agent_name="agent",
                session_id=f"s{n}",
                plan_id=None,
                branch="feature/x" if n else None,
                commit="a" * 40 if n else None,
            ),
            new_operation_id(),
        )
        ids.append(staged.memory_id)
    assert list(store.iter_memories()) == store.get_memories(ids)


def test_a_damaged_list_column_still_fails_the_read_at_that_row(tmp_path: Path) -> None:
    """A list column that is not JSON fails iter_memories as the row-by-row read always did (a
    JSONDecodeError at that row), never a memory with its lists silently shifted between fields."""
    import json

    from graph.backends.embedded.memory_store import MemoryStore

    store = MemoryStore(tmp_path / "memories.sqlite")
    try:
        store.stage(memory("", topic_id="ok"), new_operation_id())
        damaged = store.stage(memory("", topic_id="damaged"), new_operation_id()).memory_id
        store._conn.execute("UPDATE memories SET decisions = '[\"a\"' WHERE memory_id = ?", (damaged,))
        store._conn.execute("UPDATE memories SET rationale = '\"b\"],[]' WHERE memory_id = ?", (damaged,))
        read = store.iter_memories()
        assert next(read).topic_id == "ok"
        with pytest.raises(json.JSONDecodeError):
            next(read)
    finally:
        store.close()


def test_iter_memories_sorts_by_staging_time_then_insertion(tmp_path: Path) -> None:
    """Read in table order and sorted in Python: the order is SQLite's ORDER BY staged_at, rowid, with
    rows stored out of order, equal times, and a time with a non-ASCII character (UTF-8 byte order)."""
    from graph.backends.embedded.memory_store import MemoryStore

    store = MemoryStore(tmp_path / "memories.sqlite")
    try:
        stamps = ["2025-03-01T00:00:00Z", "2025-01-01T00:00:00Z", "2025-03-01T00:00:00Z", "2025-02-01T00:00:00Zé"]
        stamps += ["2025-02-01T00:00:00Z~", "2025-01-01T00:00:00Z"]
        for n, stamp in enumerate(stamps):
            staged = store.stage(memory("", topic_id=f"t{n}"), new_operation_id()).memory_id
            store._conn.execute("UPDATE memories SET staged_at = ? WHERE memory_id = ?", (stamp, staged))
        expected = [row[0] for row in store._conn.execute("SELECT topic_id FROM memories ORDER BY staged_at, rowid")]
        assert [m.topic_id for m in store.iter_memories()] == expected == ["t1", "t5", "t4", "t3", "t0", "t2"]
    finally:
        store.close()
