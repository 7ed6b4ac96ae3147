"""Issue 26 items 6 and 7, in process: which owner.json and socket a front accepts (a planted
or committed owner.json, a foreign socket path, a symlinked or foreign .flowbaby, symlinked
owner files), and that every reply shape of an owner (faults, garbage, bad events) reaches
the caller as a contract failure, never another exception."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph.api import start_watching
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.workspace import WorkspaceLock, WorkspacePaths, resolve_workspace
from graph.owner.client import CONNECT_SEC, OwnerClient, OwnerGone, _connect_sec
from graph.owner.endpoint import OwnerEndpoint
from graph.owner.wire import endpoint_file, peer_uid, published_socket
from tests.unit.owner.test_owner_endpoint import FakeService, _never


def _record(paths: WorkspacePaths, socket_path: str | Path, mode: int = 0o600) -> None:
    record = endpoint_file(paths)
    record.write_text(json.dumps({"pid": 1, "socket": str(socket_path)}))
    os.chmod(record, mode)


def _listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    return server


# -- 6. which endpoint a front accepts ---------------------------------------------------------


def test_a_committed_owner_json_is_refused(paths: WorkspacePaths) -> None:
    """A clone's files are 0644: even naming the workspace's own socket path it is not read."""
    server = _listening(paths.data / "owner.sock")
    _record(paths, paths.data / "owner.sock", mode=0o644)
    with pytest.raises(FlowbabyError, match="0644"):
        published_socket(paths)
    os.chmod(endpoint_file(paths), 0o600)
    assert published_socket(paths) == paths.data / "owner.sock"
    server.close()


def test_a_socket_outside_the_workspace_is_refused(paths: WorkspacePaths, tmp_path: Path) -> None:
    server = _listening(tmp_path / "elsewhere.sock")
    _record(paths, tmp_path / "elsewhere.sock")
    with pytest.raises(FlowbabyError) as refused:
        published_socket(paths)
    assert refused.value.code is ErrorCode.INVALID_WORKSPACE_PATH and "not a socket of this workspace" in str(
        refused.value
    )
    _record(paths, "owner.sock")  # relative: resolved against whatever the cwd is
    with pytest.raises(FlowbabyError, match="names no socket path"):
        published_socket(paths)

    async def connect() -> None:
        await OwnerClient.connect(paths, _never, deadline_sec=0.3)

    with pytest.raises(OwnerGone, match="not a socket of this workspace|names no socket"):
        asyncio.run(connect())
    server.close()


def test_the_connect_bound_comes_from_the_environment(paths: WorkspacePaths, monkeypatch: pytest.MonkeyPatch) -> None:
    """FLOWBABY_OWNER_CONNECT_SEC bounds how long a front tries an endpoint that never answers (default 10 s)."""
    import time

    monkeypatch.setenv("FLOWBABY_OWNER_CONNECT_SEC", "0.3")
    started = time.monotonic()
    with pytest.raises(OwnerGone):
        asyncio.run(OwnerClient.connect(paths, _never))  # no owner.json: never reachable
    assert 0.3 <= time.monotonic() - started < 3.0
    monkeypatch.setenv("FLOWBABY_OWNER_CONNECT_SEC", "soon")  # not seconds: the default, never a crash
    assert _connect_sec() == CONNECT_SEC == 10.0


def test_owner_json_as_a_symlink_is_refused(paths: WorkspacePaths, tmp_path: Path) -> None:
    server = _listening(paths.data / "owner.sock")
    real = tmp_path / "planted.json"
    real.write_text(json.dumps({"pid": 1, "socket": str(paths.data / "owner.sock")}))
    os.chmod(real, 0o600)
    endpoint_file(paths).symlink_to(real)
    with pytest.raises(FlowbabyError, match="is a symlink"):
        published_socket(paths)
    server.close()


def test_the_peer_uid_is_this_users(paths: WorkspacePaths) -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    assert peer_uid(left) == os.getuid() == peer_uid(right)
    left.close()
    right.close()


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_a_data_folder_that_is_a_link_or_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    if kind == "symlink":
        (root / ".flowbaby").symlink_to(target)
    else:
        (root / ".flowbaby").write_text("")
    for create in (True, False):
        with pytest.raises(FlowbabyError) as refused:
            resolve_workspace(root, create=create)
        assert refused.value.code is ErrorCode.INVALID_WORKSPACE_PATH
        assert ("is a symlink" if kind == "symlink" else "is not a folder") in refused.value.message


def test_owner_files_are_never_written_through_links(paths: WorkspacePaths, tmp_path: Path) -> None:
    """A committed `.flowbaby/owner.lock` or `owner.tmp` linking to a user file: the lock is
    refused, the staging link is replaced, and the user file is untouched."""
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=/usr/bin\n")
    paths.lock_file.symlink_to(victim)
    with pytest.raises(FlowbabyError, match="is a symlink") as refused:
        WorkspaceLock(paths).acquire()
    assert refused.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    paths.lock_file.unlink()
    endpoint_file(paths).with_suffix(".tmp").symlink_to(victim)

    async def publish() -> None:
        endpoint = OwnerEndpoint(FakeService("owner"), paths)
        await endpoint.start()
        assert published_socket(paths) == paths.data / "owner.sock"
        await endpoint.close()

    asyncio.run(publish())
    assert victim.read_text() == "export PATH=/usr/bin\n"


# -- 7. every reply shape of an owner ----------------------------------------------------------

REPLIES: dict[str, Callable[[int], bytes]] = {
    "fault": lambda i: json.dumps({"id": i, "fault": "RuntimeError: boom"}).encode() + b"\n",
    "no result": lambda i: json.dumps({"id": i}).encode() + b"\n",
    "bad failure": lambda i: json.dumps({"id": i, "failure": {"kind": "flowbaby", "code": "NOPE"}}).encode() + b"\n",
    "failure not an object": lambda i: json.dumps({"id": i, "failure": 3}).encode() + b"\n",
    "list result": lambda i: json.dumps({"id": i, "result": [1, 2]}).encode() + b"\n",
    "not json": lambda i: b"<html>hello</html>\n",
    "json not an object": lambda i: b"[1, 2, 3]\n",
    "bad event then fault": lambda i: (
        json.dumps({"event": "operationEnded", "status": {"nope": 1}}).encode()
        + b"\n"
        + json.dumps({"id": i, "fault": "x"}).encode()
        + b"\n"
    ),
}


async def _busy() -> FakeService:
    """The lock is held (by the fake owner, as far as this front can tell)."""
    raise FlowbabyError(ErrorCode.WORKSPACE_BUSY, "owned elsewhere")


async def _fake_owner(paths: WorkspacePaths, reply: Callable[[int], bytes]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            writer.write(reply(json.loads(line)["id"]))
            await writer.drain()

    server = await asyncio.start_unix_server(answer, path=str(paths.data / "owner.sock"))
    _record(paths, paths.data / "owner.sock")
    return server


@pytest.mark.parametrize("shape", sorted(REPLIES))
def test_every_owner_reply_is_a_contract_failure_or_a_result(paths: WorkspacePaths, shape: str) -> None:
    async def scenario() -> list[Any]:
        server = await _fake_owner(paths, REPLIES[shape])
        front = await OwnerClient.connect(paths, _busy)
        outcomes: list[Any] = []
        for call in (front.watch_sessions, front.health):
            try:
                outcomes.append(await asyncio.wait_for(call(), 5))
            except FlowbabyError as error:
                outcomes.append(error.code)
        await start_watching(front, "bridge")  # said on stderr, never raised
        await front.close()
        server.close()
        return outcomes

    assert asyncio.run(scenario()) == [ErrorCode.FLOWBABY_ERROR, ErrorCode.FLOWBABY_ERROR]
