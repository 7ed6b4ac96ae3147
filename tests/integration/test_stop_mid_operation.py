"""Issue 46 item 7: a stop during a forget or an import loses nothing and leaves no half state. The
workspace's service runs (`flowbaby start`); `flowbaby memories forget` or `flowbaby import FILE`
works through it, and the service is stopped (`flowbaby stop`, SIGTERM) as soon as the command says
it is working through it. After a restart: the forgotten topic is gone from every store and every
byte under .flowbaby, the other memories intact; the import is all there or not at all, and running
it again completes it with one version each."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.core.memories import memory_uuid
from tests.conftest import summary
from tests.integration.test_forget_canary import files_holding
from tests.integration.test_service_lifecycle import _env, _flowbaby, _record, _until
from tests.support.commands import CLI, serve_pids

pytestmark = pytest.mark.slow

CANARY = "zqxstopcanary5521"
OTHERS = [f"kept-{i}" for i in range(8)]
N_IMPORT = 500
"""One importMemories batch (MAX_IMPORT_BATCH): the contract's all-or-nothing unit."""
PREFIX = "imported-"


@pytest.fixture
def workspace(tmp_path: Path) -> Any:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    yield folder
    for pid in serve_pids(folder):
        os.kill(pid, signal.SIGKILL)


def _start(workspace: Path) -> tuple[str, dict[str, str]]:
    started = _flowbaby(workspace, "start")
    assert started.returncode == 0, started.stderr
    url = f"http://127.0.0.1:{_record(workspace)['port']}"
    auth = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}
    return url, auth


def _stop(workspace: Path) -> None:
    _flowbaby(workspace, "stop")
    _until(lambda: not serve_pids(workspace), "the service is gone", timeout=30)


def _during(workspace: Path, args: list[str], stop: Any) -> subprocess.CompletedProcess[str]:
    """Run `flowbaby ARGS`; when it says it works through the owner, call stop(proc); its result."""
    command = [*CLI, *args, "--workspace", str(workspace)]
    proc = subprocess.Popen(
        command, env=_env(), cwd=workspace, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None and proc.stdout is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "working through" in line:
            stop(proc)
            break
    assert lines and "working through" in lines[-1], lines
    err = "".join(lines) + proc.stderr.read()
    out = proc.stdout.read()
    proc.wait(timeout=120)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _memories(workspace: Path) -> list[tuple[str, int]]:
    listed = _flowbaby(workspace, "memories", "list", "--all-versions", "--limit", "500", "--json")
    assert listed.returncode == 0, listed.stderr
    reply = json.loads(listed.stdout)
    found = [(m["topicId"], m["version"]) for m in reply["memories"]]
    cursor = reply["nextCursor"]
    while cursor:
        page = _flowbaby(
            workspace, "memories", "list", "--all-versions", "--limit", "500", "--json", "--cursor", cursor
        )
        reply = json.loads(page.stdout)
        found += [(m["topicId"], m["version"]) for m in reply["memories"]]
        cursor = reply["nextCursor"]
    return found


def _journal(workspace: Path) -> int:
    db = sqlite3.connect(f"file:{workspace / '.flowbaby' / 'memories.sqlite'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM forget_journal").fetchone()[0])
    finally:
        db.close()


def test_a_stop_during_a_forget_loses_nothing_and_finishes_it(workspace: Path) -> None:
    url, auth = _start(workspace)
    secret = summary("secret", context=f"Stopped mid-forget: the marker is {CANARY}.", decisions=[f"Hide {CANARY}"])
    for payload in [secret, *(summary(topic, topic=f"Kept decision {topic}") for topic in OTHERS)]:
        assert httpx.post(f"{url}/api/agent/ingest", json=payload, headers=auth, timeout=30).status_code == 202
    query = {"query": f"the marker is {CANARY}", "maxResults": 5}

    def found() -> bool:
        reply = httpx.post(f"{url}/api/agent/retrieve", json=query, headers=auth, timeout=30).json()
        return "secret" in json.dumps(reply)

    _until(found, "the secret is retrievable", timeout=60)
    pid = _record(workspace)["pid"]
    seen: list[bool] = []

    def stop_when_journaled(proc: subprocess.Popen[str]) -> None:
        """SIGTERM once the store's transaction committed (the journal entry is there) and the
        vector step runs (--wait keeps it in the request), or when the forget has ended."""
        _until(lambda: _journal(workspace) or proc.poll() is not None, "the forget commits", timeout=60)
        seen.append(proc.poll() is None and _journal(workspace) > 0)
        os.kill(pid, signal.SIGTERM)

    forgot = _during(workspace, ["memories", "forget", "secret", "--yes", "--wait"], stop_when_journaled)
    _until(lambda: not serve_pids(workspace), "the service is gone", timeout=30)
    print(
        f"forget under SIGTERM: committed and in flight {seen}, exit {forgot.returncode}; journal entries left: "
        f"{_journal(workspace)}; stderr: {forgot.stderr.strip()[-600:]}"
    )

    url, auth = _start(workspace)
    if ("secret", 1) in _memories(workspace):  # the stop came before the store's transaction: nothing forgotten
        assert forgot.returncode != 0 and seen == [False], (seen, forgot.stderr)
        again = _flowbaby(workspace, "memories", "forget", "secret", "--yes")
        assert again.returncode == 0, again.stderr
    _until(lambda: _journal(workspace) == 0, "the journal finished the forget", timeout=60)
    assert sorted(_memories(workspace)) == sorted((topic, 1) for topic in OTHERS)  # the others intact
    reply = httpx.post(f"{url}/api/agent/retrieve", json=query, headers=auth, timeout=30).json()
    assert CANARY not in json.dumps(reply).lower() and '"secret"' not in json.dumps(reply)
    for topic in OTHERS:
        shown = _flowbaby(workspace, "memories", "show", topic)
        assert shown.returncode == 0 and f"Kept decision {topic}" in shown.stdout, shown.stderr
    _stop(workspace)
    assert files_holding(workspace / ".flowbaby", CANARY.encode()) == []


def _export_file(path: Path) -> None:
    lines = [{"format": "flowbaby-memories", "formatVersion": 1, "exportedAt": "2025-03-02T00:00:00Z"}]
    for i in range(N_IMPORT):
        topic = f"{PREFIX}{i:04d}"
        stamp = f"2025-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z"
        record = summary(topic, topic=f"Imported decision {i}")
        record.pop("metadata")
        record.update(
            topicId=topic,
            version=1,
            memoryId=memory_uuid(topic, 1),
            status="Active",
            createdAt=stamp,
            updatedAt=stamp,
            stagedAt=stamp,
            sessionId=None,
            planId=None,
            supersedes=None,
        )
        lines.append(record)
    lines[0]["memories"] = N_IMPORT
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_sigterm_during_an_import_leaves_all_or_nothing_and_a_rerun_completes_it(
    workspace: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    _export_file(export)
    _start(workspace)
    pid = _record(workspace)["pid"]
    imported = _during(workspace, ["import", str(export)], lambda _: os.kill(pid, signal.SIGTERM))
    _until(lambda: pid not in serve_pids(workspace), "the service leaves", timeout=30)
    _stop(workspace)  # a takeover by the import, if it took one, has ended with it
    _start(workspace)
    seen = [version for topic, version in _memories(workspace) if topic.startswith(PREFIX)]
    print(f"import under SIGTERM: exit {imported.returncode}, {len(seen)} of {N_IMPORT} visible after restart")
    assert len(seen) in (0, N_IMPORT), f"a half import: {len(seen)} of {N_IMPORT}\n{imported.stderr[-2000:]}"
    again = _flowbaby(workspace, "import", str(export))
    assert again.returncode == 0, again.stderr
    reply = json.loads(again.stdout)
    assert reply["imported"] + reply["skipped"] == N_IMPORT and reply["skipped"] == len(seen), reply
    after = [(topic, version) for topic, version in _memories(workspace) if topic.startswith(PREFIX)]
    assert sorted(after) == sorted((f"{PREFIX}{i:04d}", 1) for i in range(N_IMPORT))  # one version each
    _stop(workspace)
