"""The store's two backends for the unit tests that take `store` or `open_store`: the embedded
SQLite file (tmp_path) and the team backend on the session's real Postgres server (a fresh
namespace per test). The same tests run over both."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graph.backends.memory_store import DATABASE_URL_ENV, NAMESPACE_ENV, MemoryStoreBackend
from graph.core.store import MemoryStore

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""`make test-unit` deselects the postgres runs (a server subprocess); `make test` runs both."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend's name; for postgres, FLOWBABY_DATABASE_URL and a fresh FLOWBABY_NAMESPACE are set,
    so a FlowbabyService opened in the test uses it too."""
    if request.param == "postgres":
        monkeypatch.setenv(DATABASE_URL_ENV, request.getfixturevalue("postgres").url())
        monkeypatch.setenv(NAMESPACE_ENV, f"t{uuid.uuid4().hex[:12]}")
    return str(request.param)


@pytest.fixture
def open_store(backend: str, tmp_path: Path) -> Iterator[Callable[[], MemoryStoreBackend]]:
    """Opens the test's store; every call opens the same data again (a restart). All are closed at the end."""
    from graph.backends.memory_store import database_url

    opened: list[MemoryStoreBackend] = []

    def open_() -> MemoryStoreBackend:
        store: MemoryStoreBackend
        if backend == "sqlite":
            store = MemoryStore(tmp_path / "store.db")
        else:
            import os

            from graph.backends.team.memory_store import PostgresMemoryStore

            store = PostgresMemoryStore(database_url(), os.environ[NAMESPACE_ENV])
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
