"""Session memory on hand-built sources (tests/support/session_fixtures.py), with a hashed bag-of-words
encoder in place of MiniLM behind the index's Encoder protocol: sources, chunking, redaction,
Vapor's status transitions, incremental updates, and sources written while they are read."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graph.backends.backend import Backend
from graph.core.contract import ContractFailure
from graph.core.redaction import redact
from graph.core.workspace import WorkspacePaths
from graph.sessions.agent_api import SessionMemory
from graph.sessions.chunking import TOOL_RESULT_CHARS, message_chunks
from graph.sessions.config import SessionSettings
from graph.sessions.index import SessionIndex, SessionNotFound, sources_from
from graph.sessions.model import SessionInfo
from graph.sessions.sources.claude_code import ClaudeCodeSource
from graph.sessions.sources.opencode import OpenCodeSource
from tests.support.fakes import HashEncoder
from tests.support.session_fixtures import T0, OpenCodeDb, Transcript, text, tool


def settings(home: dict[str, Path]) -> SessionSettings:
    return SessionSettings(opencode_dir=home["opencode"], claude_dir=home["claude"])


def make_index(home: dict[str, Path], encoder: HashEncoder | None = None) -> SessionIndex:
    config = settings(home)
    return SessionIndex(
        home["ws"],
        home["data"] / "sessions",
        encoder or HashEncoder(),
        config,
        sources_from(config),
        backend=home["backend"],
    )


class GatedEncoder(HashEncoder):
    """Sets `entered` when an encode starts and holds it until `gate` is set (for at most 10 s)."""

    def __init__(self) -> None:
        self.gate, self.entered = threading.Event(), threading.Event()

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        self.gate.wait(10)
        return super().encode(texts)


def conversation(db: OpenCodeDb, sid: str) -> None:
    db.turn(sid, "user", text("Why does the nightly export job fail?"))
    db.turn(sid, "assistant", text("Let me look at the log."), tool("bash", "tail export.log", "E_QUOTA_9931 exceeded"))
    db.turn(sid, "assistant", text("The export hits the storage quota E_QUOTA_9931; raise it to 2 TB."))


@pytest.mark.parametrize("version", [1, 2])
def test_opencode_sessions_of_the_workspace_and_their_turns(home: dict[str, Path], version: int) -> None:
    db = OpenCodeDb(home["opencode"], version)
    db.session("ses_top", home["ws"], "Export failures")
    db.session("ses_sub", home["ws"] / "sub", "In a subfolder")
    db.session("ses_other", home["ws"].parent / "elsewhere", "Another workspace")
    db.session("ses_prefix", str(home["ws"]) + "-sibling", "Shares a prefix only")
    conversation(db, "ses_top")
    source = OpenCodeSource(home["opencode"])
    sessions = {s.session_id: s for s in source.sessions(str(home["ws"]))}
    assert set(sessions) == {"ses_top", "ses_sub"}
    top = sessions["ses_top"]
    assert (top.title, top.message_count, top.top_level) == ("Export failures", 3, True)
    batch = source.read(top, None)
    assert [m.role for m in batch.messages] == ["user", "assistant", "assistant"]
    chunks = message_chunks("ses_top", batch.messages[1], reasoning=False)
    assert chunks[0].embedding_id == f"turn:ses_top:{batch.messages[1].message_id}:0"
    assert "[tool bash] tail export.log" in chunks[0].text and "E_QUOTA_9931 exceeded" in chunks[0].text


def test_claude_transcript_dedupe_subagents_noise_and_cut_line(home: dict[str, Path]) -> None:
    t = Transcript(home["claude"], home["ws"])
    t.noise()
    t.user("Find why the cache is cold after deploys.")
    t.assistant(
        "msg_a1",
        {"type": "thinking", "thinking": "private reasoning"},
        {"type": "text", "text": "Checking the warmup script."},
        {"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"command": "cat warmup.sh"}},
    )
    t.assistant("msg_a1", {"type": "text", "text": "Checking the warmup script."})  # a repeated record
    t.tool_result("tu_1", "warmup skipped: WARM_KEYS unset")
    t.assistant(
        "msg_sub",
        {"type": "text", "text": "Subagent found WARM_KEYS in staging only."},
        path=t.subagents / "agent-1.jsonl",
    )
    source = ClaudeCodeSource(home["claude"])
    (info,) = source.sessions(str(home["ws"]))
    assert (info.session_id, info.directory, info.title) == (
        t.session_id,
        str(home["ws"]),
        "Find why the cache is cold after deploys.",
    )
    batch = source.read(info, None)
    by_id = {m.message_id: m for m in batch.messages}
    assert set(by_id) >= {"msg_a1", "msg_sub"} and len(batch.messages) == 4  # user, assistant, tool result, subagent
    assert [b.kind for b in by_id["msg_a1"].blocks] == ["reasoning", "text", "tool_call"]
    result = next(m for m in batch.messages if m.role == "tool")
    assert result.blocks[0].tool == "Bash"
    every = "\n".join(c.text for m in batch.messages for c in message_chunks(t.session_id, m, reasoning=False))
    assert "SYSTEM PROMPT" not in every and "private reasoning" not in every
    assert "private reasoning" in "\n".join(
        c.text for c in message_chunks(t.session_id, by_id["msg_a1"], reasoning=True)
    )

    t.write(
        '{"type": "user", "uuid": "u-cut", "cwd": "'
        + str(home["ws"])
        + '", "message": {"role": "user", "content": "half'
    )
    again = source.read(info, batch.watermark)
    assert "u-cut" not in {m.message_id for m in again.messages}  # the cut line waits
    t.write(' written"}, "timestamp": "2026-11-30T11:00:00.000Z"}\n')
    later = source.read(info, again.watermark)
    assert [m.blocks[0].text for m in later.messages if m.message_id == "u-cut"] == ["half written"]


def test_redaction_of_common_secret_shapes() -> None:
    secrets = [
        "sk-proj-" + "a" * 40,
        "ghp_" + "b" * 36,
        "AKIA" + "C" * 16,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ]
    for secret in secrets:
        cleaned, count = redact(f"before {secret} after")
        assert secret not in cleaned and "[redacted]" in cleaned and count == 1 and cleaned.startswith("before")
    cleaned, _ = redact("curl -H 'Authorization: Bearer abc.def.ghi' https://x")
    assert "abc.def" not in cleaned and "Authorization: [redacted]" in cleaned


def test_chunks_truncate_tool_results_and_mark_redactions(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    db.turn("ses_1", "assistant", tool("bash", "env", "TOKEN=ghp_" + "x" * 36 + "\n" + "y " * 5000))
    (info,) = OpenCodeSource(home["opencode"]).sessions(str(home["ws"]))
    (message,) = OpenCodeSource(home["opencode"]).read(info, None).messages
    chunks = message_chunks("ses_1", message, reasoning=False)
    assert chunks[0].redacted and "ghp_" not in "".join(c.text for c in chunks)
    assert sum(len(c.text) for c in chunks) < TOOL_RESULT_CHARS + 400
    assert "more characters not indexed" in chunks[-1].text


def lose_vectors(home: dict[str, Path], backend: str, where: str) -> None:
    """Vectors lost behind the index's back (a deleted or corrupted table): the next start sees it."""
    if backend == "sqlite":
        import lancedb

        lancedb.connect(str(home["data"] / "sessions" / "vectors.lance")).open_table("session_chunks").delete(where)
        return
    import psycopg

    from graph.backends.team.schema import schema_name

    team = home["backend"]
    with psycopg.connect(team.url, autocommit=True) as conn:
        conn.execute(f'DELETE FROM "{schema_name(team.namespace)}".session_vectors WHERE {where}'.encode())


def test_status_missing_import_ready_dirty_update_repair(home: dict[str, Path], backend: str) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    conversation(db, "ses_1")
    index = make_index(home)
    info, _ = index.find("ses_1")
    status = index.status(info)
    assert (status["status"], status["can_search"], status["chunks"]) == ("missing", False, 0)
    assert "flowbaby sessions import ses_1" in status["message"]

    assert index.import_session(info)["messages"] == 3
    status = index.status(index.find("ses_1")[0])
    assert status["status"] == "ready" and status["can_search"] and status["coverage"] == 1.0
    assert status["chunks"] == status["vectors"] == 3 and status["model"] == "MiniLM all-MiniLM-L6-v2"

    db.turn("ses_1", "user", text("And the weekly job?"))
    info = index.find("ses_1")[0]
    status = index.status(info)
    assert status["status"] == "dirty" and status["can_search"] and status["needs_update"]
    assert "flowbaby sessions update ses_1" in status["message"]
    assert index.update_session(info)["messages"] == 2  # the new turn, and the newest before it (same-ms writes)
    assert index.status(index.find("ses_1")[0])["status"] == "ready"
    hits = index.search(["opencode:ses_1"], "weekly job", 1).results
    assert hits[0]["chunk_text"] == "And the weekly job?"
    index.close()

    lose_vectors(home, backend, "embedding_id LIKE 'turn:ses_1:%'")
    index = make_index(home)
    info = index.find("ses_1")[0]
    status = index.status(info)
    assert (status["status"], status["can_search"], status["needs_repair"], status["vectors"]) == (
        "repair_needed",
        False,
        True,
        0,
    )
    assert "flowbaby sessions repair ses_1" in status["message"]
    assert index.repair_session(info)["embedded"] == 4
    assert index.status(info)["status"] == "ready"

    index.close()
    lose_vectors(home, backend, f"embedding_id = '{hits[0]['embedding_id']}'")
    index = make_index(home)
    status = index.status(index.find("ses_1")[0])
    assert (status["status"], status["can_search"], status["coverage"]) == ("partial", True, 0.75)
    index.close()


def test_vectors_of_another_encoder_variant_are_dropped_and_repaired(home: dict[str, Path], backend: str) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    conversation(db, "ses_1")
    db.turn("ses_1", "assistant", text("Done."), tool("bash", "make test", "ok"))
    db.turn("ses_1", "assistant", text("Done."), tool("bash", "make test", "ok"))  # same texts: embedded once
    calls: list[list[str]] = []

    class CountingEncoder(HashEncoder):
        def encode(self, texts: list[str]) -> list[list[float]]:
            calls.append(list(texts))
            return super().encode(texts)

    class OtherVariant(CountingEncoder):
        variant = "hash-v2"

    index = make_index(home, CountingEncoder())
    info = index.find("ses_1")[0]
    index.import_session(info)
    embedded = [t for call in calls for t in call]
    assert len(embedded) == len(set(embedded)) and index.status(info)["status"] == "ready"
    index.close()

    index = make_index(home, OtherVariant())
    status = index.status(info)
    assert (status["status"], status["vectors"]) == ("repair_needed", 0)
    index.repair_session(info)
    assert index.status(info)["status"] == "ready"
    index.close()
    if backend == "sqlite":
        assert (home["data"] / "sessions" / "vectors.variant").read_text() == "hash-v2"
    index = make_index(home, OtherVariant())
    assert index.status(info)["status"] == "ready"  # same variant: vectors kept
    index.close()


def grown_after_import(
    home: dict[str, Any], index: SessionIndex, first: str, second: str
) -> tuple[Transcript, SessionInfo]:
    """A Claude Code session `index` imported while its assistant message msg_1 held `first`, and that then
    grew by `second` (the same message, still streaming): its transcript and its listing now."""
    t = Transcript(home["claude"], home["ws"])
    t.user("Start")
    t.assistant("msg_1", {"type": "text", "text": first})
    index.import_session(index.find(t.session_id)[0])
    t.assistant("msg_1", {"type": "text", "text": second})
    return t, index.find(t.session_id)[0]


def test_a_growing_message_replaces_its_chunks(home: dict[str, Path]) -> None:
    index = make_index(home)
    _, info = grown_after_import(home, index, "First block about pagination.", "Second block about cursors.")
    assert index.status(info)["status"] == "dirty"
    index.update_session(info)
    texts = [h["chunk_text"] for h in index.search([info.key], "cursors pagination", 10).results]
    assert texts.count("First block about pagination.\nSecond block about cursors.") == 1
    assert index.status(info)["status"] == "ready" and index.status(info)["chunks"] == 2
    index.close()


def test_sources_written_while_read(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_w", home["ws"])
    t = Transcript(home["claude"], home["ws"])
    t.user("hello")
    index = make_index(home)
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            n = 0
            while not stop.is_set() and n < 400:
                db.turn("ses_w", "user", text(f"turn number {n}"))
                t.write('{"type": "user", "uuid": "u' + str(n) + '", "cwd": "' + str(home["ws"]) + '", "message": ')
                t.write('{"role": "user", "content": "line ' + str(n) + '"}, "timestamp": "2026-11-30T10:00:00Z"}\n')
                n += 1
        except BaseException as exc:  # the writer must never be blocked or fail
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    for _ in range(5):
        for sid in ("ses_w", t.session_id):
            index.update_session(index.find(sid)[0])
    stop.set()
    writer.join()
    assert not errors
    for sid in ("ses_w", t.session_id):
        info = index.find(sid)[0]
        index.update_session(info)
        status = index.status(index.find(sid)[0])
        assert status["status"] == "ready", status
        assert status["chunks"] == info.message_count
    index.close()


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_agent_api_errors_and_source_problems(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    db.session("ses_far", home["ws"].parent / "elsewhere")
    conversation(db, "ses_1")

    async def scenario() -> None:
        memory = SessionMemory(
            home["ws"], home["data"] / "sessions", HashEncoder(), settings(home), backend=home["backend"]
        )
        try:
            for op, params, code in [
                ("status", {"session_id": "ses_nope"}, "NOT_FOUND"),
                ("search", {"session_id": "ses_far", "q": "x"}, "NOT_FOUND"),  # another workspace's session
                ("current", {"cwd": str(home["ws"].parent)}, "NOT_FOUND"),
                ("search", {"session_id": "ses_1"}, "INVALID_REQUEST"),
                ("context", {"session_id": "ses_1", "q": " "}, "INVALID_REQUEST"),
                ("list", {"source": "vscode"}, "INVALID_REQUEST"),
            ]:
                with pytest.raises(ContractFailure) as failure:
                    await memory.call(op, params)
                assert failure.value.code.value == code, (op, params)
            current = await memory.call("current", {"cwd": str(home["ws"] / "sub")})  # the nearest ancestor's
            assert current["session_id"] == "ses_1" and current["index_status"]["status"] == "missing"
            await memory.call("import", {"session_id": "ses_1"})
            context = await memory.call(
                "context", {"session_id": "ses_1", "q": "storage quota", "context_turns": 1, "limit": 1}
            )
            (hit,) = context["results"]
            assert [t["role"] for t in hit["turns"]] == ["assistant", "assistant"] and hit["turns"][1]["is_hit"]
            everywhere = await memory.call("search_all", {"q": "nightly export"})
            assert everywhere["results"][0]["session_id"] == "ses_1"
        finally:
            await memory.close()

        db.close()
        for path in home["opencode"].glob("opencode.db*"):
            path.unlink()
        (home["opencode"] / "opencode.db").write_bytes(b"not a database at all, just bytes" * 100)
        memory = SessionMemory(
            home["ws"], home["data"] / "sessions", HashEncoder(), settings(home), backend=home["backend"]
        )
        try:
            status = await memory.call("status", {"session_id": "ses_1"})  # what was indexed stays searchable
            assert status["status"] == "ready" and "cannot be read" in status["message"]
            hits = await memory.call("search", {"session_id": "ses_1", "q": "storage quota"})
            assert hits["count"] == 3
            status = await memory.call("status", {"session_id": "ses_never"})  # a status with the problem, not a crash
            assert status["status"] == "missing" and "cannot be read" in status["message"]
            listed = await memory.call("list", {})
            assert listed["count"] == 0 and listed["problems"]
        finally:
            await memory.close()

    run(scenario())


def test_watcher_pass_imports_new_sessions_and_updates_changed_ones(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    conversation(db, "ses_1")
    db.session("ses_child", home["ws"], parent_id="ses_1")
    memory = SessionMemory(
        home["ws"], home["data"] / "sessions", HashEncoder(), settings(home), backend=home["backend"]
    )
    index = run(memory.index())
    assert memory.refresh(index) == 1  # the top-level session only
    assert memory.refresh(index) == 0
    db.turn("ses_1", "user", text("one more"))
    assert memory.refresh(index) == 1
    assert index.status(index.find("ses_1")[0])["status"] == "ready"
    with pytest.raises(SessionNotFound):
        index.find("ses_missing")
    run(memory.close())


def test_locked_and_unknown_schema_sources_are_problems_not_errors(home: dict[str, Path]) -> None:
    import sqlite3

    home["opencode"].mkdir()
    locked = sqlite3.connect(home["opencode"] / "opencode.db", isolation_level=None)  # rollback journal, not WAL
    locked.executescript("CREATE TABLE session (id text, directory text); BEGIN EXCLUSIVE;")
    odd = sqlite3.connect(home["opencode"] / "opencode-beta.db")
    odd.execute("CREATE TABLE something_else (x)")
    odd.commit()
    index = make_index(home)
    started = time.perf_counter()
    sessions, problems = index.listed()
    assert sessions == [] and len(problems) == 2
    assert any("locked" in p for p in problems) and any("unknown schema" in p for p in problems)
    assert time.perf_counter() - started < 10  # the busy timeout, not a hang
    locked.execute("ROLLBACK")
    locked.close()
    odd.close()
    index.close()


def test_status_is_indexing_while_an_import_runs(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    conversation(db, "ses_1")
    encoder = GatedEncoder()
    index = make_index(home, encoder)
    info = index.find("ses_1")[0]
    worker = threading.Thread(target=index.import_session, args=(info,))
    worker.start()
    assert encoder.entered.wait(10)
    status = index.status(info)
    assert (status["status"], status["can_search"]) == ("indexing", False) and "retry" in status["message"]
    encoder.gate.set()
    worker.join()
    assert index.status(index.find("ses_1")[0])["status"] == "ready"
    index.close()


def test_current_session_skips_archived_and_child_sessions(home: dict[str, Path]) -> None:
    db = OpenCodeDb(home["opencode"])
    db.session("ses_old", home["ws"])
    db.session("ses_archived", home["ws"], time_archived=T0)
    db.session("ses_child", home["ws"], parent_id="ses_old")
    db.session("ses_sub", home["ws"] / "sub")
    index = make_index(home)
    assert index.current(str(home["ws"]), None)[0].session_id == "ses_old"  # type: ignore[union-attr]
    assert index.current(str(home["ws"] / "sub" / "deeper"), None)[0].session_id == "ses_sub"  # type: ignore[union-attr]
    assert index.current(str(home["ws"]), "claude-code")[0] is None
    index.close()


def test_closing_stops_an_import_after_its_batch_and_update_finishes_it(
    home: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import graph.sessions.index as index_module

    monkeypatch.setattr(index_module, "EMBED_BATCH", 1)
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    conversation(db, "ses_1")
    encoder = GatedEncoder()
    index = make_index(home, encoder)
    worker = threading.Thread(target=index.import_session, args=(index.find("ses_1")[0],))
    worker.start()
    assert encoder.entered.wait(10)
    closer = threading.Thread(target=index.close)
    closer.start()
    time.sleep(0.2)
    encoder.gate.set()
    closer.join(10)
    worker.join(10)
    assert not closer.is_alive() and not worker.is_alive()
    index = make_index(home)
    info = index.find("ses_1")[0]
    status = index.status(info)
    assert (status["status"], status["vectors"], status["chunks"]) == ("partial", 1, 3)
    index.update_session(info)
    assert index.status(info)["status"] == "ready"
    index.close()


def test_session_vectors_of_another_size_are_made_again(
    tmp_path: Path, make_backend: Callable[[WorkspacePaths], Backend]
) -> None:
    """A model of another vector size (FLOWBABY_EMBEDDING_MODEL) gets a table (or column) of its size."""
    backend = make_backend(WorkspacePaths(tmp_path))
    first = backend.session_vectors(tmp_path, 384)
    first.add("opencode:ses_1", ["turn:ses_1:m1:0"], np.ones((1, 384), np.float32))
    assert first.total() == 1
    other = backend.session_vectors(tmp_path, 8)
    assert other.total() == 0  # the 384-d vectors cannot be compared with 8-d queries
    other.add("opencode:ses_1", ["turn:ses_1:m1:0"], np.ones((1, 8), np.float32) / np.sqrt(8))
    hits = other.nearest(["opencode:ses_1", "opencode:ses_2"], np.ones(8, np.float32) / np.sqrt(8), 1)
    assert [(hit[0], hit[1]) for hit in hits] == [("opencode:ses_1", "turn:ses_1:m1:0")]
    assert hits[0][2] == pytest.approx(1.0, abs=1e-5)
    again = backend.session_vectors(tmp_path, 8)
    assert again.total() == 1 and again.ids("opencode:ses_1") == {"turn:ses_1:m1:0"}
    for vectors in (first, other, again):
        vectors.close()


def test_flowbabys_own_tool_calls_are_markers_and_current_honours_source(home: dict[str, Path]) -> None:
    """Session search must not echo the memories flowbaby's own tools stored or retrieved (issue 27)."""
    stored = "The Zanzibar ledger rewrite moved reconciliation to nightly batches"
    t = Transcript(home["claude"], home["ws"])
    t.user("Store what we decided about the ledger.")
    payload = {"topic": "Ledger rewrite decision", "context": stored, "decisions": ["Batch reconciliation nightly"]}
    call = {"type": "tool_use", "id": "tu_fb", "name": "mcp__flowbaby__flowbaby_storeMemory", "input": payload}
    t.assistant("msg_store", call)
    t.tool_result("tu_fb", '{"success": true, "operationId": "op_1", "topic": "' + stored + '"}')
    db = OpenCodeDb(home["opencode"])
    db.session("ses_oc", home["ws"])
    db.turn("ses_oc", "user", text("What did we decide about the ledger?"))
    recall = tool("flowbaby_flowbaby_retrieveMemory", "unused", f"# Retrieved Memories (1 results)\n{stored}")
    recall["state"]["input"] = {"query": "ledger decision"}
    db.turn("ses_oc", "assistant", recall, text("We batch reconciliation nightly."))

    async def scenario() -> None:
        memory = SessionMemory(home["ws"], home["data"] / "sessions", HashEncoder(), settings(home))
        try:
            for source, sid in (("claude-code", t.session_id), ("opencode", "ses_oc")):
                current = await memory.call("current", {"cwd": str(home["ws"]), "source": source})
                assert (current["session_id"], current["source"]) == (sid, source)
                await memory.call("import", {"session_id": sid, "source": source})
            hits = (await memory.call("search_all", {"q": "Zanzibar ledger rewrite reconciliation", "limit": 20}))[
                "results"
            ]
            texts = [hit["chunk_text"] for hit in hits]
            assert not [text for text in texts if "Zanzibar" in text], texts  # neither payload nor result
            assert "[flowbaby flowbaby_storeMemory] Ledger rewrite decision" in texts
            assert "[flowbaby flowbaby_retrieveMemory] ledger decision" in "\n".join(texts)
        finally:
            await memory.close()

    run(scenario())


def test_a_turn_holding_nul_characters_is_imported_and_found(home: dict[str, Path]) -> None:
    """A tool's binary output in a transcript may hold U+0000, which Postgres text cannot, and its JSON a
    lone surrogate, which is not UTF-8: the turn is imported, searchable, and shows U+FFFD in their place."""
    db = OpenCodeDb(home["opencode"])
    db.session("ses_1", home["ws"])
    db.turn("ses_1", "user", text("Why is the dump\x00 file unreadable?"))
    db.turn(
        "ses_1", "assistant", text("It starts with NUL bytes."), tool("bash", "head -c 8 dump.bin", "\x00\x00ELF\ud800")
    )
    index = make_index(home)
    info, _ = index.find("ses_1")
    assert index.import_session(info)["messages"] == 2
    assert index.status(index.find("ses_1")[0])["status"] == "ready"
    hits = index.search(["opencode:ses_1"], "dump file unreadable", 2).results
    texts = [hit["chunk_text"] for hit in hits]
    assert "Why is the dump\ufffd file unreadable?" in texts[0]
    assert "[result bash] \ufffd\ufffdELF\ufffd" in "".join(texts) and "ELF\ufffd\ufffd" not in "".join(texts)
    index.close()
