"""The store's two backends for the unit tests that take `store` or `open_store`: the embedded
SQLite file (tmp_path) and the team backend on the session's real Postgres server (a fresh
namespace per test). The same tests run over both."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graph.core.storage import DATABASE_URL_ENV, NAMESPACE_ENV, MemoryStoreBackend
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
    from graph.core.storage import database_url

    opened: list[MemoryStoreBackend] = []

    def open_() -> MemoryStoreBackend:
        store: MemoryStoreBackend
        if backend == "sqlite":
            store = MemoryStore(tmp_path / "store.db")
        else:
            import os

            from graph.core.pg_store import PostgresMemoryStore

            store = PostgresMemoryStore(database_url(), os.environ[NAMESPACE_ENV])
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], MemoryStoreBackend]) -> MemoryStoreBackend:
    return open_store()
