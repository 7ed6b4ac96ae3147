"""Links inside `.flowbaby/` (INGEST_CONTRACT.md 9.1): the tree check at open, the files written
without following a link made after it (the logs and the audit log), and the hook, which trusts
owner.json only as the fronts do."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from flowbaby import hook
from graph.backends.embedded.audit_log import AuditLog
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.logs import configure_logging
from graph.core.workspace import resolve_workspace, unsafe_entry

SECRET = "export TOKEN=keep-me\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    file = tmp_path / "bashrc"
    file.write_text(SECRET)
    return file


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    resolve_workspace(root)
    return root


def test_a_clean_tree_with_the_owner_socket_opens(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / ".flowbaby" / "cognee" / "data").mkdir(parents=True)
    (root / ".flowbaby" / "memories.sqlite").write_bytes(b"")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / ".flowbaby" / "owner.sock"))
        assert unsafe_entry(root / ".flowbaby") is None
        assert resolve_workspace(root).data == root / ".flowbaby"


@pytest.mark.parametrize("where", ["logs/flowbaby.log", "vectors.lance/_versions", "cognee/data/deep/x.txt"])
def test_a_link_anywhere_in_the_tree_is_refused(tmp_path: Path, target: Path, where: str) -> None:
    root = _workspace(tmp_path)
    link = root / ".flowbaby" / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(FlowbabyError) as refused:
        resolve_workspace(root)
    assert refused.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    assert f"{link} is a symlink" in refused.value.message
    with pytest.raises(FlowbabyError):
        resolve_workspace(root, create=False)  # read-only readers too
    assert target.read_text() == SECRET


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    """A FIFO at a log's path would hang the process that opens it."""
    root = _workspace(tmp_path)
    fifo = root / ".flowbaby" / "logs" / "worker.log"
    os.mkfifo(fifo)
    with pytest.raises(FlowbabyError, match="not a regular file, a folder or a socket"):
        resolve_workspace(root)


def test_the_log_never_follows_a_link_made_after_open(tmp_path: Path, target: Path) -> None:
    logs = _workspace(tmp_path) / ".flowbaby" / "logs"
    (logs / "flowbaby.log").symlink_to(target)  # a `git pull` while the owner runs
    with pytest.raises(OSError) as refused:
        configure_logging(logs, to_stderr=False)
    assert refused.value.errno == errno.ELOOP
    logging.getLogger("flowbaby").info("a line")
    assert target.read_text() == SECRET


def test_the_audit_log_never_follows_a_link(tmp_path: Path, target: Path) -> None:
    data = _workspace(tmp_path) / ".flowbaby"
    (data / "agent_audit.log").symlink_to(target)
    audit = AuditLog(data / "agent_audit.log")
    audit.record("retrieveForAgent", agent_name=None, topic="q", result="success", error_code=None, duration_ms=1.0)
    assert audit.dropped == 1
    assert target.read_text() == SECRET


@pytest.mark.parametrize("planted", ["a committed owner.json (0644)", "a private owner.json naming another socket"])
def test_a_hook_sends_no_prompt_to_a_socket_a_repository_names(
    tmp_path: Path, planted: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the hook connected to whatever owner.json named and sent the user's prompt there.
    (FLOWBABY_HOOK_START_SEC=0: no service is started; the unit tier starts no process.)"""
    monkeypatch.setenv("FLOWBABY_HOOK_START_SEC", "0")
    root = _workspace(tmp_path)
    data = root / ".flowbaby"
    listening = data / "owner.sock" if "0644" in planted else tmp_path / "elsewhere.sock"
    (data / "owner.json").write_text(json.dumps({"pid": 1, "socket": str(listening)}))
    os.chmod(data / "owner.json", 0o644 if "0644" in planted else 0o600)
    received: list[bytes] = []
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(listening))
        server.listen()
        server.settimeout(1.5)

        def accept() -> None:
            with contextlib.suppress(OSError):
                peer, _ = server.accept()
                with peer:
                    peer.settimeout(1)
                    received.append(peer.recv(1 << 16))

        thread = threading.Thread(target=accept)
        thread.start()
        monkeypatch.setattr(
            sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"session_id": "s", "prompt": "my secret plan"}'))
        )
        assert hook.main(["UserPromptSubmit", "--workspace", str(root)]) == 0
        thread.join()
    assert capsys.readouterr().out == ""
    assert received == []
    assert "nothing injected (no owner endpoint" in (data / "logs" / "hooks.log").read_text()
