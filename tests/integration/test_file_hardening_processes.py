"""Issue 45, the file items, against the real `flowbaby` command on a cloned-repository-like
workspace (`git init`, committed symlinks): `import adr|docs` reads nothing outside the repository and
stores imported text redacted; `export --out` never writes through a link a repository committed at
its temporary name; a hostile export file is refused whole with its documented codes, never a
traceback (and the bridge's importMemories answers the same bytes with a parse error)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from graph.core.memories import memory_uuid
from tests.conftest import summary
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

SECRET = "sk-" + "Zq81xV0pLm3Nc7Rt5Wy2Kb9"
NETRC = "machine api.example.com login me password hunter2-netrc-secret\n"
DESIGN = f"""# Billing design

## Ledger

The ledger lives in Postgres; the reconcile job uses the key {SECRET} to reach the provider.

## Retries

Failed charges are retried three times with backoff.
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline", "FLOWBABY_FINISH_SEC": "0"}


def flowbaby(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_flowbaby(*args, env=_env(), cwd=cwd, timeout=120)


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A cloned repository (committed symlinks into the user's home among its files) and that home."""
    home = tmp_path / "home"
    (home / "adr").mkdir(parents=True)
    (home / ".netrc").write_text(NETRC)
    (home / ".bashrc").write_text("# the user's own bashrc\n")
    (home / "adr" / "0001-private.md").write_text("# 1. Private\n\n## Status\n\nAccepted\n\n## Decision\n\nHome.\n")
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "design.md").write_text(DESIGN)
    (repo / "docs" / "notes.md").symlink_to(home / ".netrc")
    (repo / ".adr-dir").write_text("../home/adr\n")
    (repo / ".memories.jsonl.partial").symlink_to(home / ".bashrc")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "a hostile clone"], check=True)
    return repo, home


def _memories(workspace: Path) -> list[dict]:
    listed = flowbaby("memories", "list", "--json", "--all-versions", "--workspace", str(workspace), cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)["memories"]


def test_import_adr_and_docs_read_nothing_outside_the_repository_and_redact(tmp_path: Path) -> None:
    """Before: `.adr-dir` = `../home/adr` was obeyed and docs/notes.md (a link to ~/.netrc) became a
    memory; a section holding a key was stored redacted but compared raw, so every re-import made a
    new version of it."""
    repo, home = _repository(tmp_path)
    adr = flowbaby("import", "adr", cwd=repo)
    assert adr.returncode == 1, adr.stdout
    refusal = json.loads(adr.stderr[adr.stderr.index("{") :])
    assert refusal["errorCode"] == "INVALID_WORKSPACE_PATH" and ".adr-dir" in refusal["error"]
    named = flowbaby("import", "adr", str(home / "adr"), cwd=repo)
    assert named.returncode == 1 and "outside the repository" in named.stderr
    given_link = flowbaby("import", "docs", "docs/notes.md", cwd=repo)
    assert given_link.returncode == 1 and "docs/notes.md: refused" in given_link.stderr

    first = flowbaby("import", "docs", "docs", cwd=repo)
    assert first.returncode == 0, first.stderr
    reply = json.loads(first.stdout)
    assert "docs/notes.md: refused" in first.stderr and "outside the repository" in first.stderr
    assert [s for s in reply["skipped"] if s.startswith("docs/notes.md: refused")]
    assert reply["added"] == 2 and reply["redacted"] == 1  # Ledger, Retries; the key
    stored = json.dumps(_memories(repo))
    assert "hunter2" not in stored and "Private" not in stored and SECRET not in stored
    assert "[redacted]" in stored and "Failed charges are retried" in stored

    again = json.loads(flowbaby("import", "docs", "docs", cwd=repo).stdout)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 2)  # no new version


def test_export_never_writes_through_a_link_at_its_temporary_name(tmp_path: Path) -> None:
    """Before: `export --out memories.jsonl` opened `.memories.jsonl.partial` with O_TRUNC, so the
    committed link put every memory into ~/.bashrc (world-readable) and renamed the link into place."""
    repo, home = _repository(tmp_path)
    assert flowbaby("import", "docs", "docs/design.md", cwd=repo).returncode == 0
    (repo / "old.jsonl").symlink_to(home / ".netrc")  # a link at the target itself is replaced, not followed
    for out in ("memories.jsonl", "old.jsonl"):
        done = flowbaby("export", "--out", out, cwd=repo)
        assert done.returncode == 0, done.stderr
        written = repo / out
        assert not written.is_symlink() and stat.S_IMODE(written.stat().st_mode) == 0o600
        lines = written.read_text().splitlines()
        assert json.loads(lines[0])["memories"] == len(lines) - 1 == 2
    assert (home / ".bashrc").read_text() == "# the user's own bashrc\n"
    assert (home / ".netrc").read_text() == NETRC
    assert os.readlink(repo / ".memories.jsonl.partial") == str(home / ".bashrc")
    assert not [p for p in repo.iterdir() if p.name.endswith(".tmp")]  # nothing left behind


def _export_line(topic_id: str) -> bytes:
    """One version as `flowbaby export` writes it."""
    stamp = "2025-03-01T10:00:00.000Z"
    fields = {k: v for k, v in summary(topic_id).items() if k != "metadata"}
    version = {"topicId": topic_id, "version": 1, "memoryId": memory_uuid(topic_id, 1), "status": "Active"}
    times = {"createdAt": stamp, "updatedAt": stamp, "stagedAt": stamp, "supersedes": None}
    return json.dumps({**fields, "timeScope": None, **version, **times}).encode()


def test_a_hostile_import_file_is_refused_whole_with_its_code(
    tmp_path: Path, spawn: Callable[..., BridgeClient]
) -> None:
    """Before: invalid UTF-8 raised UnicodeDecodeError and 200,000-deep nesting RecursionError, each a
    traceback out of `flowbaby import`."""
    header = b'{"format": "flowbaby-memories", "formatVersion": 1, "exportedAt": "2025-03-02T00:00:00Z", "memories": 2}'
    sound = _export_line("redis-cache")
    deep = b"[" * 200_000 + b"]" * 200_000
    hostile = {
        "utf8.jsonl": ([header, sound, b'{"topic": "caf\xe9 \xff"}'], "line 3: INVALID_PAYLOAD: not JSON"),
        "deep.jsonl": ([header, sound, deep], "line 3: INVALID_PAYLOAD: not JSON (nested deeper"),
        "deep-header.jsonl": ([b'{"format": ' + deep + b"}", sound], "line 1: INVALID_PAYLOAD: not JSON (nested"),
        "array.jsonl": ([header, sound, b"[]"], "line 3: INVALID_PAYLOAD: not a JSON object"),
    }
    for name, (lines, _) in hostile.items():
        (tmp_path / name).write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "folder.jsonl").mkdir()
    faults = {name: fault for name, (_, fault) in hostile.items()}
    faults["folder.jsonl"] = faults["missing.jsonl"] = "INVALID_WORKSPACE_PATH: cannot read the file"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name, fault in faults.items():
        done = flowbaby("import", str(tmp_path / name), "--workspace", str(fresh), cwd=tmp_path)
        assert done.returncode == 1, (name, done.stdout)
        assert "Traceback" not in done.stderr and fault in done.stderr, (name, done.stderr)
        assert "nothing imported" in done.stderr

    # The bridge's importMemories: the same bytes are a parse error (it reads no graph: the import is counted)
    client = spawn(fresh, env={**_env(), "FLOWBABY_BUILD_GRAPH": "0"})
    for raw in (b'{"topic": "\xff"}', deep):
        line = b'{"jsonrpc": "2.0", "id": 7, "method": "importMemories", "params": {"memories": [' + raw + b"]}}\n"
        assert client.send_raw(line)["error"]["code"] == -32700
    assert client.result("listMemories", {})["memories"] == []  # nothing from any of them
    (tmp_path / "good.jsonl").write_bytes(b"\n".join([header, sound, _export_line("frontend-build")]) + b"\n")
    good = flowbaby("import", str(tmp_path / "good.jsonl"), "--workspace", str(fresh), cwd=tmp_path)
    assert good.returncode == 0 and json.loads(good.stdout)["imported"] == 2, good.stderr  # the rest was sound
