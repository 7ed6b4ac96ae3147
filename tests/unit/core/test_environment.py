"""The process environment is read in few places (issue 47 item 4): graph.core.environment for the
engine, the fronts and the command line, and the stand-alone hook (flowbaby/hook.py, standard
library only, which cannot import it). Every FLOWBABY_* name the code reads stays documented."""

from __future__ import annotations

import ast
import re

import pytest

from graph.core.environment import Environment
from tests.unit.layout.test_boundaries import ROOT, project_modules

MAX_READERS = 6
DOCUMENTS = ("README.md", "INGEST_CONTRACT.md", "ARCHITECTURE.md", "docs")


def _touches_environment(module: str) -> bool:
    """Whether the module reads or writes os.environ (or os.getenv / putenv), however it imports them."""
    names = {"environ", "getenv", "putenv", "environb"}
    for node in ast.walk(ast.parse(project_modules()[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in names and ast.unparse(node.value) == "os":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "os" and {alias.name for alias in node.names} & names:
            return True
    return False


def test_at_most_six_modules_read_the_environment() -> None:
    readers = sorted(module for module in project_modules() if _touches_environment(module))
    assert "graph.core.environment" in readers  # the scan sees a real reader
    assert len(readers) <= MAX_READERS, f"{len(readers)} modules read the environment: {readers}"


def _documented_text() -> str:
    parts = []
    for name in DOCUMENTS:
        path = ROOT / name
        files = sorted(path.rglob("*.md")) if path.is_dir() else [path]
        parts += [file.read_text(encoding="utf-8") for file in files if file.is_file()]
    return "\n".join(parts)


def test_every_flowbaby_name_the_code_reads_is_documented() -> None:
    names = set()
    for path in project_modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(re.findall(r"\bFLOWBABY_[A-Z][A-Z_]*[A-Z]\b", node.value))
    names -= {"FLOWBABY_ERROR"}  # an error code, not a setting
    assert len(names) > 40
    text = _documented_text()
    assert not sorted(name for name in names if name not in text)


def test_a_snapshot_parses_flags_seconds_and_folders() -> None:
    environment = Environment(
        {"FLOWBABY_CAPTURE": " Off ", "FLOWBABY_LEASE_SEC": "", "XDG_DATA_HOME": "/data", "PATH": "/a::/b"}
    )
    assert environment.flag("FLOWBABY_CAPTURE") is False
    assert environment.flag("FLOWBABY_CAPTURE_LLM") is True
    assert environment.seconds("FLOWBABY_LEASE_SEC", 30.0) == 30.0
    assert str(environment.data_home) == "/data"
    assert environment.search_path == ["/a", "/b"]
    with pytest.raises(ValueError):
        Environment({"FLOWBABY_LEASE_SEC": "soon"}).seconds("FLOWBABY_LEASE_SEC", 30.0)
