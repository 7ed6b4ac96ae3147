"""No attribute of the engine is written from more than one file of graph/engine/ (issue 59, "What must
be shown"), read by tests/support/engine_attributes.py. The attributes several files write today are
listed with those files, to be given one owner each as the engine becomes composed services: a new one,
or a listed one that gains a file, fails; one written from fewer files must be listed so (off the list at one file)."""

from __future__ import annotations

from pathlib import Path

from tests.support.engine_attributes import writes, written_from_several_files

WRITTEN_FROM_SEVERAL_FILES = {
    "EngineState._embed_failures": ["lifecycle.py", "retrieval.py", "state.py"],
    "EngineState._projection_rebuild": ["lifecycle.py", "state.py"],
    "EngineState._retriever": ["forget.py", "lifecycle.py", "state.py"],
    "EngineState._snapshot_forgets": ["lifecycle.py", "state.py"],
    "EngineState._stored": ["forget.py", "ingest.py", "memories.py", "retrieval.py", "state.py"],
    "EngineState._vectors": ["lifecycle.py", "state.py"],
    "EngineState._warm_fault": ["lifecycle.py", "state.py"],
    "EngineState._warm_retry_at": ["lifecycle.py", "state.py"],
    "EngineState._warm_retry_wait": ["lifecycle.py", "retrieval.py", "state.py"],
    "EngineState._warm_task": ["lifecycle.py", "retrieval.py", "state.py"],
    "EngineState._whole_graph": ["forget.py", "inspection.py", "state.py"],
}
"""Written from several files on the day the check came (issue 59): to shrink to nothing."""


def test_the_writes_are_read_from_the_engines_source() -> None:
    found = writes()
    assert set(found["EngineState._stored"]) >= {"state.py", "ingest.py"}
    assert len(found) > 40


def test_no_other_attribute_is_written_from_more_than_one_file() -> None:
    several = written_from_several_files()
    new = {name: files for name, files in several.items() if name not in WRITTEN_FROM_SEVERAL_FILES}
    assert not new, f"give each attribute one file that writes it (a method of its owner there): {new}"
    spread = {
        name: files
        for name, files in several.items()
        if name in WRITTEN_FROM_SEVERAL_FILES and not set(files) <= set(WRITTEN_FROM_SEVERAL_FILES[name])
    }
    assert not spread, f"listed to shrink, these are written from more files instead: {spread}"


def test_a_listed_attribute_written_from_fewer_files_is_updated() -> None:
    several = written_from_several_files()
    fewer = {
        name: several.get(name, [])
        for name, files in WRITTEN_FROM_SEVERAL_FILES.items()
        if set(several.get(name, [])) < set(files)
    }
    assert not fewer, f"written from fewer files now: update (or empty) WRITTEN_FROM_SEVERAL_FILES: {fewer}"


def test_every_kind_of_write_counts_and_a_helper_class_is_its_own(tmp_path: Path) -> None:
    (tmp_path / "state.py").write_text(
        "class State:\n"
        "    def __init__(self):\n"
        "        self.a = self.b = 0\n"
        "        self.c: int = 0\n"
        "        class Inner:\n"
        "            def __init__(self):\n"
        "                self.d = 0\n"
    )
    (tmp_path / "one.py").write_text(
        "from state import State\n"
        "class One(State):\n"
        "    def go(self):\n"
        "        self.a += 1\n"
        "        (self.b, [self.x, *self.y]) = 1, [2, 3]\n"
        "        setattr(self, 'c', 3)\n"
        "class Helper:\n"
        "    def __init__(self):\n"
        "        self.d = 0\n"
    )
    (tmp_path / "two.py").write_text(
        "import state\nclass Two(state.State):\n    def go(self):\n        def later():\n            self.x = 1\n"
    )
    assert written_from_several_files(tmp_path) == {
        "State.a": ["one.py", "state.py"],
        "State.b": ["one.py", "state.py"],
        "State.c": ["one.py", "state.py"],
        "State.x": ["one.py", "two.py"],
    }
    assert writes(tmp_path)["Helper.d"] == {"one.py": [9]}
