"""The hooks' problem record as flowbaby status and health read it (graph/core/hook_problems.py), the
command line's copies of contract names it keeps to start fast, and the demo's command hints."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from flowbaby import hook
from flowbaby.next_steps import flowbaby_command
from graph.core.contract import FILTER_CONDITIONS, MemoryFilter
from graph.core.hook_problems import hook_problems, problems_path, problems_text


def _data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / ".flowbaby"
    data.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return data


def test_a_recorded_problem_is_current_until_a_hook_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _data(tmp_path, monkeypatch)
    assert (
        hook_problems(tmp_path) == {"current": False, "problems": []} and problems_text(hook_problems(tmp_path)) == ""
    )
    for n in range(25):
        hook._problem(str(tmp_path), "UserPromptSubmit", "opencode", f"nothing injected: try {n}")
    shown = hook_problems(tmp_path)
    assert shown["current"] and [p["reason"] for p in shown["problems"]] == [
        f"nothing injected: try {n}" for n in range(20, 25)
    ]
    record = problems_path(tmp_path)
    assert record.is_relative_to(tmp_path / "state") and record.stat().st_mode & 0o777 == 0o600
    assert len(json.loads(record.read_text())["problems"]) == hook.MAX_PROBLEMS
    assert not (data / "hooks" / "problems.json").exists()
    assert "current" in problems_text(shown) and "UserPromptSubmit (opencode)" in problems_text(shown)
    hook._answered(str(data))
    assert not hook_problems(tmp_path)["current"]


def test_a_planted_record_is_ignored_or_shown_harmless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _data(tmp_path, monkeypatch)
    record = problems_path(tmp_path)
    record.parent.mkdir(mode=0o700, parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"problems": [{"at": "9", "event": "x", "client": "y", "reason": "z"}]}))
    os.symlink(outside, record)
    assert hook_problems(tmp_path)["problems"] == []  # a link is not followed
    os.unlink(record)
    escape = {"at": "2026", "event": "Stop", "client": "c", "reason": "\x1b]52;c;evil\x07 text"}
    future = {"at": "2099-01-01T00:00:00.000Z", "event": "Stop", "client": "c", "reason": "from the future"}
    record.write_text(json.dumps({"problems": [escape, "not a row", future]}))
    record.chmod(0o600)
    shown = hook_problems(tmp_path)["problems"]
    assert len(shown) == 1 and "\x1b" not in shown[0]["reason"] and "\x07" not in shown[0]["reason"]


def test_the_filter_conditions_are_the_contracts_filter_fields() -> None:
    """The command line offers FILTER_CONDITIONS as options: each is a MemoryFilter field, and every field
    but allVersions is one."""
    assert set(FILTER_CONDITIONS) == set(MemoryFilter.model_fields) - {"allVersions"}


def test_the_demos_hints_name_a_command_that_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launcher = tmp_path / "checkout" / ".venv" / "bin" / "flowbaby"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(launcher), "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert flowbaby_command() == str(launcher)  # not on PATH: the launcher by its full path
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "flowbaby").symlink_to(launcher)  # what make install makes
    monkeypatch.setenv("PATH", str(bindir))
    assert flowbaby_command() == "flowbaby"
