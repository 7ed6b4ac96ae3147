"""ARCHITECTURE.md matches the code: every package its table names exists, every package of the
engine and every front has a row, and every source file it points at is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
FRONTS = ("flowbaby", "bridge", "api")


def table_rows() -> list[str]:
    """The first cell of each row of the Packages table (`graph/core/`, `graph/api.py`, ...)."""
    section = DOC.split("## Packages", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `")]
    return [cell.strip("`") for cell in cells]


def test_every_package_the_table_names_exists() -> None:
    rows = table_rows()
    assert len(rows) >= 10, rows
    assert not [row for row in rows if not (ROOT / row).exists()]


def test_every_engine_package_and_front_has_a_row() -> None:
    packages = {f"{path.parent.relative_to(ROOT)}/" for path in (ROOT / "graph").glob("*/__init__.py")}
    packages |= {f"{front}/" for front in FRONTS}
    assert not sorted(packages - set(table_rows()))


def test_every_source_file_it_points_at_exists() -> None:
    named = set(re.findall(r"`([\w./-]+/[\w.-]+\.py)`", DOC))
    assert len(named) > 30, named
    assert not sorted(path for path in named if not (ROOT / path).exists())
