"""The order `make test` hands files to its xdist workers (tests/support/file_order.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.file_order import FILE_SECONDS, file_seconds, longest_files_first

TESTS = Path(__file__).resolve().parents[1]


@dataclass
class Node:
    nodeid: str


def test_every_timed_file_exists() -> None:
    """A renamed or removed file would silently lose its place at the front."""
    missing = [path for path in FILE_SECONDS if not (TESTS / path).is_file()]
    assert not missing, missing


def test_longest_files_go_first_and_each_file_stays_whole_in_its_order() -> None:
    nodeids = [
        "tests/e2e/test_unlisted.py::test_x",
        "tests/integration/test_http_fuzz.py::test_b",
        "tests/integration/test_http_fuzz.py::test_a",
        "tests/unit/test_docs.py::test_c",
        "tests/integration/test_graph_building.py::test_d",
        "tests/integration/test_graph_building.py::test_e[1]",
    ]
    items = [Node(nodeid) for nodeid in nodeids]
    longest_files_first(items)
    order = [item.nodeid for item in items]
    assert order == [nodeids[1], nodeids[2], nodeids[4], nodeids[5], nodeids[0], nodeids[3]], order
    assert file_seconds(nodeids[0]) > file_seconds(nodeids[3]) == 0


def test_make_test_keeps_the_collection_order() -> None:
    """Without --no-loadscope-reorder xdist re-sorts the files by their number of tests."""
    makefile = (TESTS.parent / "Makefile").read_text()
    command = re.search(r"^test:.*\n(?:test:.*\n)*\t(.*)$", makefile, re.M)
    assert command and "--dist loadfile" in command.group(1) and "--no-loadscope-reorder" in command.group(1)
