"""Issue 26 items 6 and 7 against real bridges. The workspace lock is held by this test (an owner
that has not published its endpoint yet, as when two fronts start together), and:

- owner.json names a socket that a process of another uid (a real second uid: a child that drops
  to it before it listens) serves outside the workspace, then the same socket moved to
  `.flowbaby/owner.sock` and given to this user: the bridge never sends it a byte and reports
  WORKSPACE_BUSY; the uid check (SO_PEERCRED) is what refuses the second;
- `.flowbaby` is a symlink into a folder of that uid: INVALID_WORKSPACE_PATH at once;
- an owner that answers every call with a fault or garbage: the bridge keeps serving, says why
  sessions are not watched, and answers each call with FLOWBABY_ERROR, without a traceback."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import summary

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.getuid() != 0, reason="a second uid needs root to switch to it"),
]

OTHER_UID = 54321
"""A uid with no account: the listener switches to it (setuid) before it listens."""

LISTENER = """
import os, socket, sys
folder, uid = sys.argv[1], int(sys.argv[2])
os.setgroups([]); os.setgid(uid); os.setuid(uid)
server = socket.socket(socket.AF_UNIX)
server.bind(os.path.join(folder, "foreign.sock"))
server.listen()
print("listening", flush=True)
while True:
    peer, _ = server.accept()
    peer.settimeout(3)
    data = b""
    try:
        while chunk := peer.recv(65536):
            data += chunk
    except OSError:
        pass
    with open(os.path.join(folder, "received"), "ab") as log:
        log.write(data)
    peer.close()
"""


@pytest.fixture
def foreign() -> Iterator[Path]:
    """A folder of the other uid's with its listener's socket in it."""
    folder = Path(tempfile.mkdtemp(prefix="flowbaby-foreign-"))
    os.chmod(folder, 0o777)
    listener = subprocess.Popen([sys.executable, "-c", LISTENER, str(folder), str(OTHER_UID)], stdout=subprocess.PIPE)
    try:
        assert listener.stdout is not None and listener.stdout.readline() == b"listening\n"
        assert (folder / "foreign.sock").lstat().st_uid == OTHER_UID
        yield folder
    finally:
        listener.kill()
        listener.wait()
        shutil.rmtree(folder)


@contextlib.contextmanager
def held_lock(workspace: Path) -> Iterator[Path]:
    data = workspace / ".flowbaby"
    data.mkdir(mode=0o700, exist_ok=True)
    with (data / "owner.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("1")
        lock.flush()
        yield data


def _publish(data: Path, socket_path: Path) -> None:
    record = data / "owner.json"
    record.write_text(json.dumps({"pid": 1, "socket": str(socket_path)}))
    os.chmod(record, 0o600)


def _unavailable(client) -> dict:
    """The bridgeUnavailable notification (the bridge then exits)."""
    note = client.wait_notification(timeout=30)
    assert note["method"] == "bridgeUnavailable", note
    assert client.proc.wait(30) != 0
    return note["params"]


def test_a_foreign_socket_never_receives_a_front(spawn, workspace: Path, foreign: Path) -> None:
    # Each front tries the endpoint (every 0.1 s) for this long, then WORKSPACE_BUSY (default 10 s).
    env = {**os.environ, "FLOWBABY_OWNER_CONNECT_SEC": "1"}
    with held_lock(workspace) as data:
        _publish(data, foreign / "foreign.sock")  # a private owner.json, as through a symlinked .flowbaby
        params = _unavailable(spawn(workspace, env=env))
        assert params["errorCode"] == "WORKSPACE_BUSY", params
        assert not (foreign / "received").exists()

        inside = data / "owner.sock"
        os.rename(foreign / "foreign.sock", inside)  # the other uid's listener, at the owner's path
        os.chown(inside, os.getuid(), os.getgid())  # and looking like ours: only its peer uid tells
        _publish(data, inside)
        params = _unavailable(spawn(workspace, env=env))
        assert params["errorCode"] == "WORKSPACE_BUSY", params
        time.sleep(0.5)
        received = (foreign / "received").read_bytes() if (foreign / "received").exists() else b""
        assert received == b"", received  # connected (to read its uid), nothing sent


def test_a_symlinked_data_folder_of_another_user_is_refused(spawn, workspace: Path, foreign: Path) -> None:
    elsewhere = foreign / "data"
    elsewhere.mkdir()
    os.chown(elsewhere, OTHER_UID, OTHER_UID)
    (workspace / ".flowbaby").symlink_to(elsewhere)
    params = _unavailable(spawn(workspace))
    assert params["errorCode"] == "INVALID_WORKSPACE_PATH" and "is a symlink" in params["error"], params
    assert list(elsewhere.iterdir()) == []


def _faulting_owner(path: Path, stop: threading.Event) -> None:
    """Answers each call with a fault, then a line that is not JSON (the connection ends)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen()
    server.settimeout(0.2)
    calls = 0
    while not stop.is_set():
        try:
            peer, _ = server.accept()
        except TimeoutError:
            continue
        with peer, peer.makefile("rwb") as wire:
            for line in wire:
                calls += 1
                reply = {"id": json.loads(line)["id"], "fault": "RuntimeError: boom"}
                wire.write(json.dumps(reply).encode() + b"\n" if calls % 3 else b"<garbage>\n")
                wire.flush()
    server.close()


def test_an_owner_that_faults_never_crashes_a_front(spawn, workspace: Path, tmp_path: Path) -> None:
    stop = threading.Event()
    with held_lock(workspace) as data:
        thread = threading.Thread(target=_faulting_owner, args=(data / "owner.sock", stop), daemon=True)
        thread.start()
        time.sleep(0.3)
        _publish(data, data / "owner.sock")
        client = spawn(workspace)
        try:
            for method, params in [("health", None), ("ingestForAgent", summary()), ("health", None)] * 2:
                reply = client.call(method, params, timeout=30)
                assert "FLOWBABY_ERROR" in json.dumps(reply), reply
                assert client.proc.poll() is None
        finally:
            client.close()
            stop.set()
            thread.join()
    stderr = (tmp_path / "bridge-0.stderr").read_text()
    assert "sessions are not watched: FLOWBABY_ERROR" in stderr, stderr
    assert "Traceback" not in stderr, stderr
