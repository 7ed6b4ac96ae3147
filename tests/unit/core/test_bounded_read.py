"""graph/core/bounded_read.py: a FIFO, a device or a link out of the folder reads as nothing, and never blocks;
a regular file inside reads to its cap."""

from __future__ import annotations

import os
from pathlib import Path

from graph.core.bounded_read import read_prefix


def test_only_regular_files_inside_are_read(tmp_path: Path) -> None:
    inside = tmp_path / "in"
    inside.mkdir()
    (inside / "notes.txt").write_text("0123456789")
    os.mkfifo(inside / "fifo")  # opened non-blocking: no writer, no hang
    (inside / "zero").symlink_to("/dev/zero")
    (tmp_path / "secret").write_text("key")
    (inside / "out").symlink_to(tmp_path / "secret")
    assert read_prefix(inside / "notes.txt", inside, 4) == b"0123"
    assert read_prefix(inside / "fifo", inside, 4) is None
    assert read_prefix(inside / "zero", inside, 4) is None
    assert read_prefix(inside / "out", inside, 4) is None
    assert read_prefix(inside / "missing", inside, 4) is None
