"""The memory browser's ES modules (api/ui/) import one another one way only: a cycle makes the
order in which the browser evaluates them depend on which module it loads first, and ties
modules that should stand alone (the API client, the DOM helpers) to the page that uses them."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

UI = Path(__file__).resolve().parents[3] / "api" / "ui"
# `import … from "x"`, `export … from "x"`, `import "x"` and `import("x")`, at the start of a statement.
STATIC = re.compile(r"^\s*(?:import|export)\b[^;\"'`]*?\bfrom\s*[\"']([^\"']+)[\"']", re.MULTILINE)
BARE = re.compile(r"^\s*import\s*[\"']([^\"']+)[\"']", re.MULTILINE)
DYNAMIC = re.compile(r"\bimport\(\s*[\"']([^\"']+)[\"']\s*\)")


def specifiers(source: str) -> list[str]:
    return [match for pattern in (STATIC, BARE, DYNAMIC) for match in pattern.findall(source)]


def import_graph(folder: Path) -> nx.DiGraph:
    """Module -> the modules it imports, by file name; an import of a missing file is an error."""
    graph = nx.DiGraph()
    for module in sorted(folder.glob("*.js")):
        graph.add_node(module.name)
        for spec in specifiers(module.read_text(encoding="utf-8")):
            assert spec.startswith("./"), f"{module.name} imports {spec!r}: the page has no build step, only ./ files"
            target = (folder / spec).resolve()
            assert target.is_file(), f"{module.name} imports {spec!r}, which is not a file in {folder}"
            graph.add_edge(module.name, target.name)
    return graph


def test_specifiers_are_read_from_every_import_form() -> None:
    source = (
        'import { a } from "./a.js";\nexport { b } from "./b.js";\nimport "./c.js";\n'
        'const d = await import("./d.js");\n'
    )
    assert specifiers(source) == ["./a.js", "./b.js", "./c.js", "./d.js"]


def test_browser_modules_import_each_other_one_way() -> None:
    graph = import_graph(UI)
    assert graph.number_of_edges() > 0, "no imports found: the parser no longer reads the modules"
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"api/ui modules import each other in a cycle: {[' -> '.join([*c, c[0]]) for c in cycles]}"
