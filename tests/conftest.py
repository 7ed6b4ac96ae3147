"""Shared fixtures: real bridge subprocesses on temporary workspaces."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from graph.core.workspace import WorkspacePaths, resolve_workspace
from tests.support.postgres import PostgresServer

# A front that leaves with graph work unfinished hands it on to a detached finisher (graph.owner.finisher),
# which would go on building after the test ended: the suite's fronts leave none behind unless a test
# sets FLOWBABY_FINISH_SEC itself (tests/test_first_hour.py).
os.environ.setdefault("FLOWBABY_FINISH_SEC", "0")


def summary(topic_id: str = "redis-cache", **overrides: Any) -> dict[str, Any]:
    """A valid ingestForAgent payload; keyword overrides replace top-level fields."""
    payload: dict[str, Any] = {
        "topic": "Redis caching decision",
        "context": "We moved the session cache from Memcached to Redis because billing/reconcile.py "
        "kept failing with E_LEDGER_LOCK.",
        "decisions": ["Use Redis cache with a 15 minute TTL for session data"],
        "rationale": ["Redis keeps sessions across restarts"],
        "openQuestions": ["Do we need Redis Sentinel?"],
        "nextSteps": ["Wrap auth/session_store.py with a cache-aside layer"],
        "references": ["PR #482"],
        "agentName": "architect",
        "metadata": {
            "topicId": topic_id,
            "createdAt": "2025-03-01T10:00:00Z",
            "updatedAt": "2025-03-01T10:00:00Z",
            "planId": "plan-015",
            "sessionId": "sess-1",
            "status": "Active",
        },
    }
    payload.update(overrides)
    return payload


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` runs the `alone` tests from the files that spell `mark.alone` (Makefile): a test
    marked some other way would run in neither of its two steps, so it is refused here."""
    for item in items:
        if item.get_closest_marker("alone") and "mark.alone" not in item.path.read_text():
            raise pytest.UsageError(f"{item.nodeid}: mark it with pytest.mark.alone in its file (see Makefile: test)")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def paths(workspace: Path) -> WorkspacePaths:
    """The `workspace` folder resolved, with its .flowbaby/ made."""
    return resolve_workspace(workspace)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., BridgeClient]]:
    """Start bridges that are always stopped at the end of the test.

    At teardown the test has checked all it checks: a bridge still running on a workspace of the test's
    own (under its tmp_path) is killed, not closed. Its close would wait out the shutdown grace of a
    running graph batch and finish the vectors queued, work no test reads (1-7 s a bridge). Its
    children (cognee worker, LanceDB children) die with it (PR_SET_PDEATHSIG). A bridge on a workspace
    another test may use (a module's built one), or owning the session's user store, is closed."""
    clients: list[tuple[BridgeClient, Path]] = []

    def start(workspace: Path, *args: str, env: dict[str, str] | None = None) -> BridgeClient:
        log = open(tmp_path / f"bridge-{len(clients)}.stderr", "wb")  # noqa: SIM115 (closed at teardown)
        client = BridgeClient(workspace, extra_args=["--shutdown-grace", "2", *args], env=env, stderr=log)
        clients.append((client, Path(workspace)))
        return client

    yield start
    for client, workspace in clients:
        if client.proc.poll() is not None:
            continue
        if workspace.resolve().is_relative_to(tmp_path.resolve()) and not _owns_user_store(client.proc.pid):
            client.kill()
        else:
            client.close(timeout=60)


def _owns_user_store(pid: int) -> bool:
    """Whether `pid` holds the user store's lock (.flowbaby/owner.lock holds its owner's pid)."""
    lock = Path(os.environ.get("FLOWBABY_USER_STORE", "/nonexistent")) / ".flowbaby" / "owner.lock"
    try:
        return lock.read_text().strip() == str(pid)
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _user_store_of_the_tests(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every process of the suite reads the user scope (docs/contract/21-user-scope.md) from a store of the
    session's own, never the developer's ~/.local/share/flowbaby/user; a test may name another."""
    os.environ["FLOWBABY_USER_STORE"] = str(tmp_path_factory.mktemp("user-scope") / "user")


@pytest.fixture(scope="session", autouse=True)
def _state_folder_of_the_tests(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The hooks' problem records and deep workspaces' socket folders live in the user's state folder
    (docs/contract/17-client-hooks.md, 09-workspace-files.md): the suite's own, never the developer's
    ~/.local/state; a test may name another."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))


@pytest.fixture(scope="session", autouse=True)
def _no_service_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A client's hook may start a workspace's service (INGEST_CONTRACT.md 9.2), which stays up to its
    idle time: at the end of the session every `flowbaby serve` of a workspace under this session's
    temporary folder is stopped, so no test run leaves one behind."""
    yield
    base = str(tmp_path_factory.getbasetemp())
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "serve" in words and any(word.startswith(base) for word in words):
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGTERM)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real Postgres 18 + pgvector server per test session (per xdist worker), on loopback."""
    server = PostgresServer.start()
    yield server
    server.remove()
