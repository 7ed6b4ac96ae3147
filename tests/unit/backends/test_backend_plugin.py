"""Adding a backend touches no existing file: a third backend, written only into this test's
folder as a package beside graph.backends' own, is found for its URL scheme by open_backend's
convention (graph.backends.backend.backend_class) and serves the engine an ingest and a retrieval.
The package is put on graph.backends' search path, which is what a new folder under
graph/backends/ would be; no module of the project is edited or patched for it."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import graph.backends
from flowbaby.owner_line import call_json
from graph.backends.backend import DATABASE_URL_ENV, backend_class, backend_for, open_backend
from graph.backends.embedded.backend import EmbeddedBackend
from graph.cognify.operations import OperationManager
from graph.core.contract import FlowbabyError
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, resolve_workspace
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.support.fakes import FakeWorker
from tests.unit.engine.test_export_import import started
from tests.unit.engine.test_hardening import HashEmbedder, run

ROOT = Path(__file__).resolve().parents[3]

TINY_BACKEND = '''
"""A tiny backend: the embedded stores under a folder of its own, and its audit in memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from graph.backends.backend import Backend
from graph.backends.embedded.backend import EmbeddedBackend
from graph.core.workspace import resolve_workspace


class ListAudit:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def record(self, command: str, **fields: Any) -> None:
        self.entries.append({"command": command, **fields})

    def tail(self, limit: int) -> list[dict[str, Any]]:
        return self.entries[-limit:]

    def forget(self, keys: Any) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class TinyBackend(Backend):
    opened: ClassVar[list[str]] = []
    audits: ClassVar[list[ListAudit]] = []

    @property
    def inner(self) -> EmbeddedBackend:
        folder = self.paths.data / "tiny" / self.url.split("://", 1)[1]
        folder.mkdir(parents=True, exist_ok=True)
        return EmbeddedBackend(resolve_workspace(folder))

    def _open(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.opened.append(name)
        return getattr(self.inner, name)(*args, **kwargs)

    def memory_store(self, *, check: bool = False, owner: bool = True) -> Any:
        return self._open("memory_store", check=check, owner=owner)

    def vectors(self, embedder: Any, idle_sec: float | None) -> Any:
        return self._open("vectors", embedder, None)

    def lexical(self) -> Any:
        return self._open("lexical")

    def throttle(self, per_minute: int | None) -> Any:
        return self._open("throttle", per_minute)

    def projection(self) -> Any:
        return self._open("projection")

    def audit(self) -> Any:
        self.opened.append("audit")
        self.audits.append(ListAudit())
        return self.audits[-1]

    def decision_log(self) -> Any:
        return self._open("decision_log")

    def session_store(self, folder: Any) -> Any:
        return self._open("session_store", folder)

    def session_vectors(self, folder: Any, dimensions: int, idle_sec: float | None = None) -> Any:
        return self._open("session_vectors", folder, dimensions, None)


BACKEND = TinyBackend
'''


@pytest.fixture
def tiny_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The third backend's package `tiny` (scheme tiny://), in this test's folder only."""
    package = tmp_path / "plugins" / "tiny"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A third backend."""\n\nSCHEMES = ("tiny",)\n', encoding="utf-8")
    (package / "backend.py").write_text(textwrap.dedent(TINY_BACKEND), encoding="utf-8")
    monkeypatch.setattr(graph.backends, "__path__", [*graph.backends.__path__, str(package.parent)])
    yield package
    for name in [name for name in sys.modules if name.startswith("graph.backends.tiny")]:
        del sys.modules[name]


def test_the_two_backends_are_found_by_their_schemes() -> None:
    assert backend_class("") is EmbeddedBackend
    team = backend_class("postgresql://flowbaby@localhost/db")
    assert team is backend_class("postgres://flowbaby@localhost/db")
    assert team.__module__ == "graph.backends.team.backend" and team.shared
    with pytest.raises(FlowbabyError, match=r"must be a postgres://, postgresql:// URL"):
        backend_class("tiny://nowhere")


def test_a_third_backend_is_a_new_package_and_serves_the_engine(
    tiny_package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "tiny://box")
    paths = resolve_workspace(tmp_path)
    backend = open_backend(paths)
    assert type(backend).__name__ == "TinyBackend" and type(backend).__module__ == "graph.backends.tiny.backend"
    assert backend_for(paths, "tiny://box").url == "tiny://box"

    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None, backend=backend)
    service.embedder = HashEmbedder()  # type: ignore[assignment]
    service.operations = OperationManager(service.store, FakeWorker(), max_running=2, max_queued=50, timeout_sec=30)

    async def body() -> dict[str, object]:
        async with started(service):
            await call_json(service, "ingest", summary("redis-cache"))
            await service.flush_vectors()
            return await call_json(
                service, "retrieve", {"query": "Why did we move the session cache to Redis?", "maxResults": 3}
            )

    try:
        reply = run(body)
    finally:
        service.store.close()
    tiny = type(backend)
    assert [entry["topicId"] for entry in reply["entries"]] == ["redis-cache"]  # type: ignore[index]
    assert {"memory_store", "vectors", "lexical", "throttle", "projection", "audit"} <= set(tiny.opened)  # type: ignore[attr-defined]
    commands = [entry["command"] for audit in tiny.audits for entry in audit.entries]  # type: ignore[attr-defined]
    assert "ingestForAgent" in commands and "retrieveForAgent" in commands
    assert (paths.data / "tiny" / "box" / ".flowbaby" / "memories.sqlite").is_file()  # its own place
    assert not paths.store_db.exists()


def test_adding_it_changed_no_file_of_the_project(tiny_package: Path) -> None:
    """The package was found without a line of the project naming it, and lives outside it."""
    importlib.import_module("graph.backends.tiny.backend")
    naming = [
        str(path.relative_to(ROOT))
        for package in ("graph", "api", "bridge", "flowbaby")
        for path in (ROOT / package).rglob("*.py")
        if re.search(r"backends\.tiny|tiny://|[\"']tiny[\"']", path.read_text(encoding="utf-8"))
    ]
    assert not naming
    assert not (ROOT / "graph" / "backends" / "tiny").exists()
    assert ROOT not in tiny_package.parents
