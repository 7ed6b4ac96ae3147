"""Workspaces with their graph built once per test run and copied by the tests that start from them.

A graph build costs a cognee worker start and a cognify (~16 CPU-s); copying the built folder costs
milliseconds. Under pytest-xdist the first worker to ask builds into the run's shared temporary
folder under a file lock, and the others wait for it and copy.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from graph.api import adopt_workspace
from tests.support.retrieval_fixtures import MULTI_HOP_SET

MULTI_HOP_REVISED = {
    **MULTI_HOP_SET[0],
    "decisions": ["Track the permanent fix as PLAT-2291", "Page on-call for E_LEDGER_LOCK"],
}
"""A second version of MULTI_HOP_SET's first memory."""


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_graph(root: Path, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ingest `payloads` into the workspace `root` through a bridge and wait for its graph; the replies."""
    env = {**os.environ, "FLOWBABY_MAX_RUNNING": "20", "FLOWBABY_MAX_QUEUED": "50"}
    client = BridgeClient(root, env=env, stderr=subprocess.DEVNULL)
    try:
        replies = [client.result("ingestForAgent", payload) for payload in payloads]
        assert all(reply["staged"] for reply in replies), replies
        client.wait_idle(600)
    finally:
        client.close()
    return replies


def _build_multi_hop_revised(root: Path) -> None:
    replies = build_graph(root, [*MULTI_HOP_SET, MULTI_HOP_REVISED])
    assert replies[-1]["ingestion_metrics"]["version"] == 2


def _build_demo(root: Path) -> None:
    from flowbaby.demo_data import DEMO_SUMMARIES

    build_graph(root, DEMO_SUMMARIES)


BUILDS: dict[str, Callable[[Path], None]] = {"multi-hop-revised": _build_multi_hop_revised, "demo": _build_demo}
"""Builds by name; a test module may add its own (the name is the key of the shared build)."""


def built_copy(factory: pytest.TempPathFactory, name: str, target: Path) -> Path:
    """A copy at `target` of the workspace `name` of BUILDS, built with its graph once per run."""
    shared = _shared_root(factory) / "built-workspaces"
    shared.mkdir(exist_ok=True)
    source, done = shared / name, shared / f"{name}.done"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(source, ignore_errors=True)  # a build that failed half-way
            source.mkdir()
            BUILDS[name](source)
            done.touch()
    shutil.copytree(source, target)
    adopt_workspace(target)  # the seals bind the folder: a copy elsewhere is the user's by `flowbaby adopt`
    return target
