"""Issue 58 item 6 through the real `flowbaby` command: an export file (anyone's) never retires the
person's decision on its own say. A date after the import's run is refused; a replacement or a newer
version of a memory the person wrote leaves it current unless the person passes --retire-mine; and what
an import retires is printed with the command that gives it back, which works."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT
from graph.core.memories import memory_uuid
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

MINE = "Ship application logs with Filebeat into Elasticsearch"
MOVED = "Moved application log storage from Elasticsearch to Grafana Loki"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "FLOWBABY_USER_STORE": str(tmp_path / "user"),
        "FLOWBABY_BUILD_GRAPH": "0",
        "FLOWBABY_RECONCILE_BUDGET_MS": "20000",
        "PYTHONPATH": str(PROJECT_ROOT),
    }


def _workspace(tmp_path: Path, name: str, env: dict[str, str]) -> Path:
    """A workspace holding the person's own decision on the logs (topicId `logs`, from the command line)."""
    folder = tmp_path / name
    folder.mkdir()
    done = run_flowbaby(
        *("memories", "add", "--workspace", str(folder), "--topic", "Application logs", "--topic-id", "logs"),
        *("--context", "Application logs.", "--decision", MINE),
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def _file(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> Path:
    header = {"format": "flowbaby-memories", "formatVersion": 1, "exportedAt": records[0]["stagedAt"]}
    path = tmp_path / f"{name}.jsonl"
    lines = [json.dumps({**header, "memories": len(records)}), *(json.dumps(r) for r in records)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _record(topic_id: str, version: int, topic: str, decision: str, when: datetime) -> dict[str, Any]:
    stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "topicId": topic_id,
        "version": version,
        "memoryId": memory_uuid(topic_id, version),
        "status": "DecisionRecord",
        "topic": topic,
        "context": f"{topic}.",
        "decisions": [decision],
        "agentName": "teammate",
        "createdAt": stamp,
        "updatedAt": stamp,
        "stagedAt": stamp,
    }


def _latest(workspace: Path, env: dict[str, str], topic_id: str = "logs") -> dict[str, Any]:
    done = run_flowbaby("memories", "show", topic_id, "--workspace", str(workspace), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout)["latest"])


def _import(workspace: Path, env: dict[str, str], path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_flowbaby("import", str(path), "--workspace", str(workspace), *flags, env=env)


def _undo(done: subprocess.CompletedProcess[str], topic_id: str, env: dict[str, str]) -> None:
    """Run the command the import printed to give `topic_id` back."""
    line = next(line for line in done.stderr.splitlines() if line.startswith(f"flowbaby import: retired {topic_id} "))
    command = line.split("undo: ", 1)[1].replace("flowbaby ", f"{run_flowbaby_prefix()} ")
    undone = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=300)
    assert undone.returncode == 0, undone.stderr[-2000:]


def run_flowbaby_prefix() -> str:
    """The `flowbaby` command as the tests run it (this interpreter, this tree)."""
    from tests.support.commands import CLI

    return " ".join(f"'{part}'" for part in CLI)


def test_a_future_dated_or_replacing_import_leaves_the_persons_decision_current(tmp_path: Path) -> None:
    env = _env(tmp_path)
    workspace = _workspace(tmp_path, "ws", env)
    now = datetime.now(UTC)

    future = _file(
        tmp_path, "future", [_record("moved", 1, "Application log storage", MOVED, datetime(2099, 1, 1, tzinfo=UTC))]
    )
    refused = _import(workspace, env, future)
    assert refused.returncode == 1 and "is after this import's run" in refused.stderr, refused.stderr[-2000:]
    assert _latest(workspace, env)["status"] == "Active"

    moved = _file(
        tmp_path, "moved", [_record("moved", 1, "Application log storage", MOVED, now - timedelta(minutes=1))]
    )
    done = _import(workspace, env, moved)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["retired"] == [] and "retired" not in done.stderr
    assert _latest(workspace, env)["status"] == "Active"  # the person's decision is still current

    newer = _file(tmp_path, "newer", [_record("logs", 2, "Application logs", "Ship logs to Loki", now)])
    refused = _import(workspace, env, newer)
    assert refused.returncode == 1 and "PERSON_WRITTEN" in refused.stderr, refused.stderr[-2000:]
    assert _latest(workspace, env)["version"] == 1

    done = _import(workspace, env, newer, "--retire-mine")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [r["topicId"] for r in json.loads(done.stdout)["retired"]] == ["logs"]
    assert _latest(workspace, env)["version"] == 2
    _undo(done, "logs", env)
    latest = _latest(workspace, env)
    assert (latest["version"], latest["status"], latest["decisions"]) == (1, "Active", [MINE])


def test_an_import_the_person_lets_retire_their_memory_prints_the_restore(tmp_path: Path) -> None:
    env = _env(tmp_path)
    workspace = _workspace(tmp_path, "ws", env)
    moved = _file(tmp_path, "moved", [_record("moved", 1, "Application log storage", MOVED, datetime.now(UTC))])
    done = _import(workspace, env, moved, "--retire-mine")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "flowbaby memories restore logs --workspace" in done.stderr, done.stderr[-2000:]
    assert _latest(workspace, env)["status"] == "Superseded"
    _undo(done, "logs", env)
    assert _latest(workspace, env)["status"] == "Active"
