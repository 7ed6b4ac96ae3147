"""`flowbaby memories list|show|forget`, `flowbaby export` and `flowbaby import` as a user runs them:
subprocesses working through a bridge that owns the workspace (the owner endpoint), and alone on
a second workspace."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from bridge.client import BridgeClient
from tests.conftest import summary
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow


def flowbaby(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_flowbaby(*args, input=stdin)


def store_three(client: BridgeClient) -> None:
    """redis-cache, frontend-build and scratch/a stored and their graph built: what the command-line tests
    list, show, filter and forget."""
    for payload in (
        summary("redis-cache"),
        summary("frontend-build", topic="Frontend build", context="We build the frontend with vite now."),
        summary("scratch/a", topic="Scratch", context="A scratch note about nothing in particular."),
    ):
        assert client.result("ingestForAgent", payload)["success"]
    client.wait_idle(600)


def test_list_show_forget_export_import(spawn, workspace: Path, tmp_path: Path) -> None:
    client = spawn(workspace)
    store_three(client)
    ws = ("--workspace", str(workspace))

    listed = flowbaby("memories", "list", *ws, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {m["topicId"] for m in json.loads(listed.stdout)["memories"]} == {
        "redis-cache",
        "frontend-build",
        "scratch/a",
    }
    table = flowbaby("memories", "list", *ws, "--topic-prefix", "scratch/")
    assert "scratch/a" in table.stdout and "redis-cache" not in table.stdout
    shown = json.loads(flowbaby("memories", "show", "redis-cache", *ws).stdout)
    assert shown["latest"]["topic"] == "Redis caching decision" and shown["entities"]  # its graph was built

    out = tmp_path / "memories.jsonl"
    exported = flowbaby("export", *ws, "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["memories"] == 3 and len(lines) == 4

    dry = json.loads(flowbaby("memories", "forget", "redis-cache", *ws, "--dry-run").stdout)
    assert (dry["dryRun"], dry["versions"]) == (True, 1)
    declined = flowbaby("memories", "forget", "redis-cache", *ws, stdin="n\n")
    assert "[y/N]" in declined.stderr and "nothing forgotten" in declined.stderr
    assert client.result("getMemory", {"topicId": "redis-cache"})["success"]
    confirmed = flowbaby("memories", "forget", "redis-cache", *ws, stdin="y\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert json.loads(confirmed.stdout)["versions"] == 1
    assert client.result("getMemory", {"topicId": "redis-cache"})["errorCode"] == "NOT_FOUND"
    by_filter = json.loads(flowbaby("memories", "forget", *ws, "--topic-prefix", "scratch/", "--yes").stdout)
    assert by_filter["topicIds"] == ["scratch/a"]
    refused = flowbaby("memories", "forget", *ws, "--yes")
    assert refused.returncode != 0 and "at least one filter option" in refused.stderr
    missing = flowbaby("memories", "forget", "nope", *ws, "--yes")
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr
    assert client.close() == 0

    other = tmp_path / "other"
    other.mkdir()
    first = flowbaby("import", str(out), "--workspace", str(other))
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["imported"] == 3
    again = json.loads(flowbaby("import", str(out), "--workspace", str(other)).stdout)
    assert (again["imported"], again["skipped"]) == (0, 3)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], '{"topic": 5}', lines[3]]) + "\n")
    refused_file = flowbaby("import", str(bad), "--workspace", str(tmp_path / "third"))
    assert refused_file.returncode == 1
    assert 'line 3: INVALID_PAYLOAD: Field "topic" must be a non-empty string' in refused_file.stderr
    assert "nothing imported" in refused_file.stderr
