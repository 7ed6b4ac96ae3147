"""What a repository or a client folder plants is read only where it lies and only so far (issue 58): on a real
git repository, a committed link out of the repository is never looked at by freshness (its target's text is
not searched for the symbol, nor its state reported), a symbol past MAX_READ_BYTES of a file is not found, and
the session sources follow no link out of the client's folder and pass over a record longer than MAX_LINE_BYTES."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graph.code import freshness
from graph.code.freshness import FreshnessChecker
from graph.sessions.sources import jsonl_files
from graph.sessions.sources.codex import CodexSource
from tests.integration.test_freshness import Git, check


def test_freshness_does_not_follow_a_committed_link_out(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "id_key.py"
    secret.parent.mkdir()
    secret.write_text("PRIVATE_SIGNING_KEY = 'zz'\n")
    repo = Git(tmp_path / "repo")
    repo.write("README.md", "# repo\n")
    (repo.root / "keys.py").symlink_to(secret)
    (repo.root / "keys_dir").symlink_to(secret.parent, target_is_directory=True)
    repo.commit("links", "2026-01-01T10:00:00Z")
    for checker in (FreshnessChecker(repo.root), FreshnessChecker(repo.root, enabled=False)):
        fresh = check(checker, "keys.py:PRIVATE_SIGNING_KEY", "keys_dir/id_key.py")
        states = [(r.state, r.reason) for r in fresh.references]
        assert all(state == "unknown" for state, _ in states), states


def test_freshness_reads_a_file_only_to_its_cap(tmp_path: Path) -> None:
    repo = Git(tmp_path / "repo")
    cap = getattr(freshness, "MAX_READ_BYTES", 2 * 1024 * 1024)  # documented as 2 MiB
    repo.write("big.py", "# filler\n" * (cap // 9 + 10) + "def late_symbol():\n    pass\n")
    repo.write("small.py", "def early_symbol():\n    pass\n")
    repo.commit("files", "2026-01-01T10:00:00Z")
    fresh = check(FreshnessChecker(repo.root), "big.py:late_symbol", "small.py:early_symbol")
    assert [r.state for r in fresh.references] == ["missing", "current"], fresh.references


def _rollout(folder: Path, cwd: Path, sid: str, extra: list[dict[str, object]]) -> Path:
    path = folder / "sessions" / "2026" / "12" / "07" / f"rollout-2026-12-07T10-00-00-{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"type": "session_meta", "payload": {"id": sid, "cwd": str(cwd)}}
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Session {sid} here"}]}
    rows = [meta, *extra, {"type": "response_item", "payload": said}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_session_files_follow_no_link_out_and_skip_a_huge_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_files, "MAX_LINE_BYTES", 4096, raising=False)
    project, codex = tmp_path / "project", tmp_path / "codex"
    outside = _rollout(tmp_path / "elsewhere", project, "outside", [])
    huge = {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "x" * 10_000}}
    _rollout(codex, project, "inside", [huge])
    link = codex / "sessions" / "2026" / "12" / "07" / "rollout-2026-12-07T11-00-00-outside.jsonl"
    os.symlink(outside, link)
    source = CodexSource(codex)
    listed = source.sessions(str(project))
    assert [s.session_id for s in listed] == ["inside"], listed
    assert any(str(link) in problem for problem in source.problems), source.problems
    turns = [b.text for m in source.read(listed[0], None).messages for b in m.blocks]
    assert turns == ["Session inside here"], turns
