"""The store's two backends for the unit tests that take `backend`, `store` or `open_store`: the
embedded SQLite file (tmp_path) and the team backend on the session's real Postgres server (a fresh
namespace per test). The same tests run over both; a test opens what it needs through a
`Backend` (`make_backend`), never through environment variables."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.backends.backend import Backend, backend_for
from graph.backends.memory_store import MemoryStoreBackend
from graph.core.workspace import WorkspacePaths

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""`make test-unit` deselects the postgres runs (a server subprocess); `make test` runs both."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend's name: sqlite (embedded) or postgres (team)."""
    return str(request.param)


@pytest.fixture
def make_backend(backend: str, request: pytest.FixtureRequest) -> Callable[[WorkspacePaths], Backend]:
    """The test's backend for a workspace folder: embedded, or the team backend on the session's
    Postgres server in a namespace of this test's own (the same for every folder of the test)."""
    url = request.getfixturevalue("postgres").url() if backend == "postgres" else ""
    namespace = f"t{uuid.uuid4().hex[:12]}" if url else None
    return lambda paths: backend_for(paths, url, namespace)


@pytest.fixture
def home(tmp_path: Path, make_backend: Callable[[WorkspacePaths], Backend]) -> dict[str, Any]:
    """The session tests' folders (test_sessions, test_session_search): the sources on disk, a workspace with
    a sub folder, and its backend: SQLite and LanceDB under the workspace, or the namespace's tables on the
    session's real Postgres."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    return {
        "ws": ws,
        "opencode": tmp_path / "opencode",
        "claude": tmp_path / "claude",
        "data": ws / ".flowbaby",
        "backend": make_backend(WorkspacePaths(ws)),
    }


@pytest.fixture
def open_store(
    make_backend: Callable[[WorkspacePaths], Backend], tmp_path: Path
) -> Iterator[Callable[[], MemoryStoreBackend]]:
    """Opens the test's store; every call opens the same data again (a restart). All are closed at the end."""
    opened: list[MemoryStoreBackend] = []
    paths = WorkspacePaths(tmp_path)
    paths.data.mkdir(exist_ok=True)

    def open_() -> MemoryStoreBackend:
        store = make_backend(paths).memory_store()
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], MemoryStoreBackend]) -> MemoryStoreBackend:
    return open_store()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes the Postgres server is a postgres test, whether or not it says so."""
    for item in items:
        if "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system"})
_spawning = {"allowed": True}
"""False while a unit test that is not a postgres test runs (collection and fixtures' ends may spawn)."""


def _no_processes(event: str, args: tuple[object, ...]) -> None:
    if event in _PROCESS_EVENTS and not _spawning["allowed"]:
        raise RuntimeError(f"the unit tier starts no process ({event}): use a fake behind a Protocol")


sys.addaudithook(_no_processes)


@pytest.fixture(autouse=True)
def no_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """The unit tier runs in this process; the subprocess suite covers the real processes."""
    _spawning["allowed"] = request.node.get_closest_marker("postgres") is not None
    yield
    _spawning["allowed"] = True
