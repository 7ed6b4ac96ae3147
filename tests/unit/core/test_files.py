"""graph.core.files, the one way a file is written whole: never through a link, never half written,
private unless the caller keeps a user's mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from graph.core.files import atomic_writer, remove_leftovers, write_atomic


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("mine\n")
    target = tmp_path / "out.json"
    target.symlink_to(victim)
    write_atomic(target, "{}")
    assert victim.read_text() == "mine\n"
    assert not target.is_symlink() and target.read_text() == "{}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write("half")
        raise RuntimeError("cut short")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_user_mode_and_leftovers(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_atomic(tmp_path / "config.json", b"{}", mode=None)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "config.json").stat().st_mode) == 0o644
    (tmp_path / ".config.json.abc123.tmp").write_text("left by a kill")
    remove_leftovers(tmp_path / "config.json")
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
