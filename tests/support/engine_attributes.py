"""Which files of graph/engine/ write each attribute of the engine's objects (issue 59: the engine is
one object in many classes, and an attribute written from several files has no one owner).

A write is `self.<name> = ...` (also inside a tuple or list target, annotated or augmented, `+=`), and
`setattr(self, "<name>", ...)`, read from the source, not run, in a method of a class of graph/engine/.
Classes that inherit from one another share their attributes, so an attribute is named by the top of its
class's hierarchy within graph/engine/ (`EngineState._stored`); a helper class is its own top.
`python -m tests.support.engine_attributes` prints every attribute written from more than one file."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "graph" / "engine"


def _targets(node: ast.AST) -> list[ast.expr]:
    """The expressions an assignment statement stores into, tuples and lists unpacked."""
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    else:
        return []
    flat: list[ast.expr] = []
    while found:
        target = found.pop()
        if isinstance(target, ast.Tuple | ast.List):
            found.extend(target.elts)
        elif isinstance(target, ast.Starred):
            found.append(target.value)
        else:
            flat.append(target)
    return flat


def _written(node: ast.AST) -> list[str]:
    """The attributes of `self` that one statement or call writes."""
    names = [
        target.attr
        for target in _targets(node)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "self"
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        names.append(node.args[1].value)
    return names


def _tops(classes: dict[str, list[str]], name: str) -> frozenset[str]:
    """The classes at the top of `name`'s hierarchy: its bases within graph/engine/, followed up."""
    bases = [base for base in classes[name] if base in classes and base != name]
    return frozenset({name}) if not bases else frozenset().union(*(_tops(classes, base) for base in bases))


def _class_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node of a class's body, but those of classes nested in it (their `self` is another)."""
    found: list[ast.AST] = []
    waiting = list(ast.iter_child_nodes(node))
    while waiting:
        child = waiting.pop()
        if not isinstance(child, ast.ClassDef):
            found.append(child)
            waiting.extend(ast.iter_child_nodes(child))
    return found


def writes(engine: Path = ENGINE) -> dict[str, dict[str, list[int]]]:
    """`Top.attribute` -> {file name -> the lines that write it}, over every class of `engine`'s modules."""
    modules = {path.name: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(engine.glob("*.py"))}
    defined = [(file, node) for file, tree in modules.items() for node in tree.body if isinstance(node, ast.ClassDef)]
    classes = {node.name: [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases] for _, node in defined}
    found: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for file, node in defined:
        top = "+".join(sorted(_tops(classes, node.name)))
        for child in _class_nodes(node):
            for name in _written(child):
                found[f"{top}.{name}"][file].append(getattr(child, "lineno", 0))
    return {name: {file: sorted(lines) for file, lines in files.items()} for name, files in found.items()}


def written_from_several_files(engine: Path = ENGINE) -> dict[str, list[str]]:
    """attribute -> the files that write it, for each attribute more than one file writes."""
    return {name: sorted(files) for name, files in sorted(writes(engine).items()) if len(files) > 1}


def main() -> None:
    everything = writes()
    several = written_from_several_files()
    print(f"{len(everything)} attributes written in graph/engine/; {len(several)} from more than one file:")
    for name, files in several.items():
        where = ", ".join(f"{file} {','.join(map(str, everything[name][file]))}" for file in files)
        print(f"  {name}: {len(files)} files: {where}")


if __name__ == "__main__":
    main()
