"""The canary test (issue 28): a memory whose context and decisions hold a unique canary is staged,
built into the graph by the real cognee worker (once, then copied elsewhere per test: every forget
here runs in a moved workspace), retrieved, then forgotten through the real bridge.
Afterwards the canary is in no retrieval answer, no graphSnapshot, and no byte of any file under
.flowbaby/ (SQLite and its WAL, LanceDB's fragments, cognee's databases, the projection, the catalog snapshot, logs,
the audit log, which held it as the memory's agent name);
memories that shared entities with it answer as before."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import summary
from tests.support.built_workspaces import BUILDS, build_graph, built_copy

pytestmark = pytest.mark.slow

CANARY = "zqxcanary4417"
"""One word (the offline extractor and BM25 read words), found in no other text."""
AGENT = f"release bot of {CANARY}"
"""The memory's free-text agent name holds the canary too: the audit lines that staged it must lose it."""


def secret_rotation(key: str) -> dict[str, Any]:
    """The memory to forget: CANARY in its decision and agent name, and in its context after `key`."""
    return summary(
        "secret-rotation",
        topic="Redis credential rotation",
        context=f"The Redis cache for billing/reconcile.py rotates its credentials; {key}",
        decisions=[f"Store {CANARY} in the vault, never in Redis"],
        agentName=AGENT,
    )


SECRET = secret_rotation(f"the rotation key is {CANARY}.")
OTHER = summary("frontend-build", topic="Frontend build", decisions=["Use vite"])
OTHER["context"] = "The frontend build moved from webpack to vite to cut cold starts."


def _build_canary_set(root: Path) -> None:
    """The neighbour (redis-cache shares Redis and billing/reconcile.py with the secret), another
    memory and the secret, built once per run; each test forgets in its own copy (built_copy: a
    workspace moved and adopted, whose cognee rows name the folder it was built in)."""
    build_graph(root, [summary("redis-cache"), OTHER, SECRET])


BUILDS["forget-canary"] = _build_canary_set


@pytest.fixture
def built(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the built canary workspace, elsewhere than where it was built (a moved workspace)."""
    return built_copy(tmp_path_factory, "forget-canary", tmp_path / "built")


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under root whose bytes contain needle (case-sensitive) or its upper-case form."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if needle in data or needle.upper() in data:
                found.append(str(path.relative_to(root)))
    return found


def export_all(client: Any) -> list[dict[str, Any]]:
    """Every version as exportMemories pages it."""
    memories: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = client.result("exportMemories", {"cursor": cursor} if cursor else {})
        memories += page["memories"]
        cursor = page["nextCursor"]
        if cursor is None:
            return memories


def ranked(reply: dict[str, Any]) -> list[str]:
    return [entry["topicId"] for entry in reply["entries"]]


def test_a_forgotten_memory_leaves_no_byte_behind(spawn, built: Path) -> None:
    workspace = built
    # Started on the built copy: warm-up writes the catalog snapshot (graph.search.snapshot), with the canary's words.
    client = spawn(workspace)
    assert client.result("retrieveForAgent", {"query": "warm up"})["success"]
    deadline = time.monotonic() + 60
    while not (workspace / ".flowbaby" / "catalog.npz").exists():
        assert time.monotonic() < deadline, "no catalog snapshot written"
        time.sleep(0.1)
    neighbour_query = {"query": "Why did we move the session cache to Redis?", "maxResults": 5}
    before = client.result("retrieveForAgent", neighbour_query)
    found = client.result("retrieveForAgent", {"query": f"rotation key {CANARY}", "maxResults": 5})
    assert ranked(found)[0] == "secret-rotation"
    snapshot = client.result("graphSnapshot", {"hops": 2})
    assert any(n.get("topic_id") == "secret-rotation" for n in snapshot["nodes"])
    data = workspace / ".flowbaby"
    held = files_holding(data, CANARY.encode())
    # The byte scan can see it where it was written: SQLite, LanceDB's fragments and cognee's files.
    for where in ("memories.sqlite", "vectors.lance/", "cognee/", "catalog.npz", "agent_audit.log"):
        assert any(where in path for path in held), (where, held)

    exported = json.dumps(export_all(client))
    assert CANARY in exported
    dry = client.result("forgetMemory", {"topicId": "secret-rotation", "dryRun": True})
    assert (dry["success"], dry["versions"], dry["forgetId"]) == (True, 1, None)
    reply = client.result("forgetMemory", {"topicId": "secret-rotation"}, timeout=120)
    assert reply["success"] and reply["versions"] == 1 and reply["pending"] == [], reply
    unknown = client.result("forgetMemory", {"topicId": "secret-rotation"})
    assert unknown["errorCode"] == "NOT_FOUND"

    after = client.result("retrieveForAgent", {"query": f"rotation key {CANARY}", "maxResults": 5})
    assert "secret-rotation" not in ranked(after) and CANARY not in json.dumps(after).lower()
    snapshot = client.result("graphSnapshot", {"hops": 2})
    assert CANARY not in json.dumps(snapshot).lower()
    assert not any(n.get("topic_id") == "secret-rotation" for n in snapshot["nodes"])
    assert CANARY not in json.dumps(export_all(client)).lower()
    again = client.result("retrieveForAgent", neighbour_query)
    assert ranked(again) == [t for t in ranked(before) if t != "secret-rotation"]
    assert {e["topicId"]: e["summaryText"] for e in again["entries"]} == {
        e["topicId"]: e["summaryText"] for e in before["entries"] if e["topicId"] != "secret-rotation"
    }
    assert client.close() == 0
    assert files_holding(data, CANARY.encode()) == []


def namespace_rows_holding(url: str, schemas: list[str], needle: str) -> list[str]:
    """Every table of these schemas with a row whose text (the whole row cast to text) holds needle,
    or a bytea value that holds it as stored or once inflated (a bytea casts to hex text, and the
    graph projection's row is zlib: graph.backends.team.projection.unpack)."""
    import psycopg
    from psycopg import sql

    from graph.backends.team.projection import unpack

    found = []
    wanted = needle.lower().encode()  # as the row text is searched: case-blind
    with psycopg.connect(url) as conn:
        for schema in schemas:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = %s AND table_type = 'BASE TABLE'",
                    (schema,),
                )
            ]
            for table in tables:
                query = sql.SQL("SELECT count(*) FROM {}.{} t WHERE lower(t::text) LIKE %s").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
                row = conn.execute(query, (f"%{needle.lower()}%",)).fetchone()
                columns = [
                    column
                    for (column,) in conn.execute(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name = %s AND data_type = 'bytea'",
                        (schema, table),
                    )
                ]
                values = [
                    bytes(value)
                    for column in columns
                    for (value,) in conn.execute(
                        sql.SQL("SELECT {} FROM {}.{}").format(
                            sql.Identifier(column), sql.Identifier(schema), sql.Identifier(table)
                        ),
                        binary=True,
                    )
                    if value is not None
                ]
                if (row and row[0]) or any(wanted in b.lower() for v in values for b in (v, unpack(v))):
                    found.append(f"{schema}.{table}")
    return found


@pytest.mark.postgres
def test_a_forgotten_memory_leaves_no_row_in_the_namespace(spawn, postgres, tmp_path: Path) -> None:
    import uuid

    from graph.backends.team.cognee_databases import cognee_schema
    from graph.backends.team.schema import schema_name
    from tests.integration.test_team_backend import _env

    namespace = f"forget{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "team"
    folder.mkdir()
    client = spawn(folder, env=_env(postgres.url(), namespace))
    # the canary in a path: an entity of the projection (a decision sentence is no entity, issue 49)
    secret = secret_rotation(f"the key is in vault/{CANARY}.key.")
    for payload in (summary("redis-cache"), secret):
        assert client.result("ingestForAgent", payload)["success"]
    client.wait_idle(600)
    schemas = [schema_name(namespace), cognee_schema(namespace)]
    held = namespace_rows_holding(postgres.url(), schemas, CANARY)
    assert any(t.startswith(schema_name(namespace)) for t in held) and any(
        t.startswith(cognee_schema(namespace)) for t in held
    ), held
    assert f"{schema_name(namespace)}.graph_projection" in held, held  # the check reads inside the zlib row
    assert f"{schema_name(namespace)}.audit_log" in held, held  # the agent name of the line that staged it
    reply = client.result("forgetMemory", {"topicId": "secret-rotation"}, timeout=120)
    assert reply["success"] and reply["pending"] == [], reply
    after = client.result("retrieveForAgent", {"query": f"rotation key {CANARY}", "maxResults": 5})
    assert "secret-rotation" not in ranked(after)
    assert CANARY not in json.dumps(client.result("graphSnapshot", {"hops": 2})).lower()
    assert client.result("getMemory", {"topicId": "redis-cache"})["success"]
    assert client.close() == 0
    assert namespace_rows_holding(postgres.url(), schemas, CANARY) == []
    assert files_holding(folder / ".flowbaby", CANARY.encode()) == []


def test_a_forget_killed_mid_way_is_finished_at_the_next_start(spawn, built: Path) -> None:
    """kill -9 right after the forget's store transaction committed (its journal entry appears):
    the next start finishes the vector and graph steps, and the canary leaves every file."""
    import sqlite3
    import threading

    workspace = built
    client = spawn(workspace)
    data = workspace / ".flowbaby"
    replies: list[Any] = []
    forget = {"topicId": "secret-rotation"}
    threading.Thread(
        target=lambda: replies.append(_quietly(lambda: client.call("forgetMemory", forget, 120))),
        daemon=True,
    ).start()
    store = sqlite3.connect(f"file:{data / 'memories.sqlite'}?mode=ro", uri=True)
    deadline = time.monotonic() + 60
    while not store.execute("SELECT COUNT(*) FROM forget_journal").fetchone()[0]:
        assert time.monotonic() < deadline, "the forget never committed"
        time.sleep(0.005)
    client.kill()
    left = store.execute("SELECT pending FROM forget_journal").fetchall()
    store.close()
    assert left and "graph" in left[0][0]  # killed before the graph step was done
    assert files_holding(data, CANARY.encode())  # cognee still held it

    again = spawn(workspace)
    assert again.result("getMemory", forget)["errorCode"] == "NOT_FOUND"
    deadline = time.monotonic() + 300
    while True:
        status = sqlite3.connect(f"file:{data / 'memories.sqlite'}?mode=ro", uri=True)
        open_entries = status.execute("SELECT COUNT(*) FROM forget_journal").fetchone()[0]
        status.close()
        if not open_entries:
            break
        assert time.monotonic() < deadline, "the journal entry was never finished"
        time.sleep(0.5)
    after = again.result("retrieveForAgent", {"query": f"rotation key {CANARY}", "maxResults": 5})
    assert "secret-rotation" not in ranked(after)
    assert again.close() == 0
    assert files_holding(data, CANARY.encode()) == []


def _quietly(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # the bridge was killed under the call
        return exc


def test_a_forget_in_a_copied_workspace_leaves_no_byte_behind(spawn, built: Path, tmp_path: Path) -> None:
    """cognee records its text files by absolute, percent-encoded URI (data.raw_data_location,
    file:///<folder>/...): in a workspace copied once more (to a path with a space) and adopted with
    `flowbaby adopt`, a forget still removes the copy's own file, and never the original's."""
    import shutil

    from tests.support.commands import run_flowbaby

    original = files_holding(built / ".flowbaby", CANARY.encode())
    assert any(path.startswith("cognee/data/") for path in original), original
    copy = tmp_path / "moved here" / "ws"  # a space: cognee percent-encodes it in its URIs
    shutil.copytree(built, copy, symlinks=True)
    adopted = run_flowbaby("adopt", str(copy))
    assert adopted.returncode == 0, adopted.stderr

    client = spawn(copy)
    reply = client.result("forgetMemory", {"topicId": "secret-rotation"}, timeout=120)
    assert reply["success"] and reply["pending"] == [], reply
    assert client.result("getMemory", {"topicId": "redis-cache"})["success"]
    assert client.close() == 0
    assert files_holding(copy / ".flowbaby", CANARY.encode()) == []
    assert files_holding(built / ".flowbaby", CANARY.encode()) == original  # not its folder: untouched
