"""The layout's rules, read from the source's imports (lazy imports inside functions included):
only the worker child imports cognee, the fronts reach the engine through its service API and
contract, no front imports another, only the command line (`flowbaby`) starts fronts, the
owning process never imports the worker's modules, and nothing imports in a cycle."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("graph", "bridge", "api", "flowbaby")
FRONTS = ("bridge", "api")
COMMAND_LINE = "flowbaby"
WORKER = "graph.cognify.worker"
FRONT_MAY_IMPORT = {
    "graph",
    "graph.api",
    "graph.core.contract",
    "graph.core.jsonwire",
    "graph.core.methods",
    # Standard-library modules the command line reads before, or instead of, loading the engine
    # (graph.api costs half a second of start-up): which folder keeps a workspace's memory,
    # the hooks' problems, the workspace's service record, the graph export formats, the memory
    # filter's condition names (`flowbaby memories` options).
    "graph.core.workspace_root",
    "graph.core.hook_problems",
    "graph.core.environment",
    "graph.owner.service_record",
    "graph.inspection.names",
    "graph.core.filter_conditions",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def project_modules() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


@cache
def imports_of(module: str) -> frozenset[str]:
    """Every module `module` imports: third-party names as written, project names resolved
    to the module (a `from package import submodule` counts as the submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(project_modules()[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if f"{node.module}.{alias.name}" in project_modules()
            )
    return frozenset(found)


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_layout_is_read_from_real_source() -> None:
    modules = project_modules()
    assert {
        "graph.api",
        "graph.engine.service",
        "graph.core.contract",
        f"{WORKER}.cognee_worker",
        "bridge.server",
        "api.app",
    } <= set(modules)
    assert "cognee" in imports_of(f"{WORKER}.cognee_worker")


@pytest.mark.parametrize("module", sorted(project_modules()))
def test_only_the_worker_child_imports_cognee(module: str) -> None:
    if _within(module, WORKER):
        return
    assert not [name for name in imports_of(module) if _within(name, "cognee")], (
        f"{module} imports cognee; only {WORKER} may (it runs in the child process)"
    )


@pytest.mark.parametrize("module", sorted(project_modules()))
def test_the_owning_process_never_imports_the_worker(module: str) -> None:
    if _within(module, WORKER):
        return
    assert not [name for name in imports_of(module) if _within(name, WORKER)], (
        f"{module} imports {WORKER}; the owner starts it as a child process instead"
    )


@pytest.mark.parametrize("module", sorted(m for m in project_modules() if m.split(".")[0] in FRONTS + (COMMAND_LINE,)))
def test_fronts_use_only_the_service_api_and_the_contract(module: str) -> None:
    engine = {name for name in imports_of(module) if _within(name, "graph")}
    assert engine <= FRONT_MAY_IMPORT, f"{module} reaches into the engine: {sorted(engine - FRONT_MAY_IMPORT)}"


def test_only_the_facade_and_the_finisher_reach_into_the_engine() -> None:
    """graph.engine's modules are the engine's inside: the fronts see graph.api, and the finisher
    (graph.owner.finisher, the owner after a front leaves) opens a FlowbabyService itself. The two
    clients that stand in for the service (the owner's and a team server's) and the owner's endpoint
    take its Protocol from graph.core.service_protocol (a typed operation's models, which cross the
    owner's socket as JSON)."""
    reached = {
        module: {name for name in imports_of(module) if _within(name, "graph.engine")}
        for module in project_modules()
        if not _within(module, "graph.engine")
    }
    assert {module for module, names in reached.items() if names} == {"graph.api", "graph.owner.finisher"}


@pytest.mark.parametrize("module", sorted(m for m in project_modules() if _within(m, "graph.core")))
def test_graph_core_imports_nothing_else_of_the_project(module: str) -> None:
    """graph.core is the bottom layer every other package builds on (ARCHITECTURE.md)."""
    project = {name for name in imports_of(module) if name.split(".")[0] in PACKAGES}
    assert all(_within(name, "graph.core") for name in project), f"{module} imports {sorted(project)}"


def test_the_engine_never_imports_a_front() -> None:
    offenders = {
        module: sorted(name for name in imports_of(module) if name.split(".")[0] in FRONTS + (COMMAND_LINE,))
        for module in project_modules()
        if _within(module, "graph")
    }
    assert not {module: names for module, names in offenders.items() if names}


@pytest.mark.parametrize("module", sorted(m for m in project_modules() if m.split(".")[0] in FRONTS))
def test_no_front_imports_another_or_the_command_line(module: str) -> None:
    """`python -m bridge` (bridge.__main__) is the command line's second door, so it may call it."""
    own = module.split(".")[0]
    allowed = (COMMAND_LINE,) if module == "bridge.__main__" else ()
    others = sorted(
        name
        for name in imports_of(module)
        if name.split(".")[0] in FRONTS + (COMMAND_LINE,) and name.split(".")[0] not in (own, *allowed)
    )
    assert not others, f"{module} imports {others}; only the command line ({COMMAND_LINE}) starts fronts"


def test_no_import_cycles() -> None:
    graph = nx.DiGraph()
    modules = project_modules()
    for module in modules:
        graph.add_node(module)
        for name in imports_of(module):
            if name in modules and name != module:
                graph.add_edge(module, name)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


def _reads_database_url(module: str) -> bool:
    """Whether the module reads FLOWBABY_DATABASE_URL from the environment (writing it, as the
    command line's --database-url does, is not reading)."""

    def names_it(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "DATABASE_URL_ENV") or (
            isinstance(node, ast.Constant) and node.value == "FLOWBABY_DATABASE_URL"
        )

    for node in ast.walk(ast.parse(project_modules()[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and names_it(node.args[0]):
            func = ast.unparse(node.func)
            if func in ("os.environ.get", "os.getenv", "environ.get", "getenv", "os.environ.pop"):
                return True
            if func in ("Environment.read().get", "environment.get"):  # graph.core.environment's snapshot
                return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and names_it(node.slice):
            return True
    return False


def test_only_open_backend_reads_the_database_url() -> None:
    """graph.backends.backend chooses the backend; everything else receives a Backend (or asks it)."""
    readers = sorted(module for module in project_modules() if _reads_database_url(module))
    assert readers == ["graph.backends.backend"]


BACKEND_IMPLEMENTATIONS = ("graph.backends.embedded", "graph.backends.team")
REACHES_INTO_A_BACKEND = {
    # the notebook's read-only look at a local workspace's store, which no backend object opens
    "graph.inspection.workspace_graph": {"graph.backends.embedded.memory_store"},
}


def test_only_graph_backends_imports_a_backends_implementation() -> None:
    """The stores are opened through graph.backends.backend.Backend; the exceptions are listed
    with their reason, so a new one is a decision, not an accident."""
    found: dict[str, set[str]] = {}
    for module in project_modules():
        if _within(module, "graph.backends"):
            continue
        reached = {
            name
            for name in imports_of(module)
            if any(_within(name, package) for package in BACKEND_IMPLEMENTATIONS) and name in project_modules()
        }
        if reached:
            found[module] = reached
    assert found == REACHES_INTO_A_BACKEND


@pytest.mark.parametrize("module", sorted(m for m in project_modules() if _within(m, "graph.backends")))
def test_backends_import_only_graph_core(module: str) -> None:
    """A backend is the engine's floor: it may use the core (contract, memory model, chunks, BM25)
    and the other backend modules, never the engine above it (search, sessions, service...), so a
    backend can be written, and replaced, without knowing the engine."""
    above = sorted(
        name
        for name in imports_of(module)
        if _within(name, "graph") and not _within(name, "graph.core") and not _within(name, "graph.backends")
    )
    assert not above, f"{module} imports {above}; graph.backends may import only graph.core"


SERVICE_CLIENTS = ("graph.owner.client", "graph.remote.client")


def _reached_from(module: str) -> set[str]:
    """The project's modules `module` loads, itself included, through any chain of imports."""
    reached: set[str] = set()
    waiting = [module]
    while waiting:
        name = waiting.pop()
        if name in reached or name not in project_modules():
            continue
        reached.add(name)
        waiting.extend(imports_of(name))
    return reached


@pytest.mark.parametrize("module", SERVICE_CLIENTS)
def test_the_service_clients_never_import_the_engine(module: str) -> None:
    """The owner's client and a team server's client stand in for the engine behind the same
    MemoryService Protocol (graph.core.service_protocol): they know the contract, never the engine's
    inside, directly or through another module, so the engine can be rebuilt without touching them."""
    engine = sorted(name for name in _reached_from(module) if _within(name, "graph.engine"))
    assert not engine, f"{module} loads {engine}; take MemoryService from graph.core.service_protocol"
