"""The owner endpoint's wire format: one JSON object per line over a unix socket.

A request names a service method and its keyword arguments; a reply carries the method's
result, a contract failure (code, message, details: raised again as the same exception on
the far side) or a fault. The owner also pushes an `operationEnded` event to every
connected front, so each front can notify its own clients.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graph.core.contract import (
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    RetrievalError,
    RetrievalErrorCode,
)
from graph.core.environment import Environment
from graph.core.workspace import WorkspacePaths

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A request is at most a 4 MiB bridge line or HTTP body plus its framing."""
MAX_REPLY_BYTES = 512 * 1024 * 1024
"""A reply can be a whole graph snapshot: bounded by what the owner builds, not by this framing."""
SOCKET_PATH_MAX = 100
"""sun_path holds 108 bytes; a deeper workspace gets its socket under the runtime folder."""


def encode(message: dict[str, Any]) -> bytes:
    return (
        json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=_plain).encode(
            "utf-8", "backslashreplace"
        )
        + b"\n"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def failure_to_wire(error: ContractFailure) -> dict[str, Any]:
    kind = "retrieval" if isinstance(error, RetrievalError) else "flowbaby"
    return {"kind": kind, "code": error.code.value, "message": error.message, "details": error.details}


def failure_from_wire(data: dict[str, Any]) -> ContractFailure:
    details = data.get("details") or {}
    if data.get("kind") == "retrieval":
        return RetrievalError(RetrievalErrorCode(data["code"]), data["message"], **details)
    return FlowbabyError(ErrorCode(data["code"]), data["message"], **details)


def endpoint_file(paths: WorkspacePaths) -> Path:
    """Written by the owner: its pid and socket path, so a later front finds it."""
    return paths.data / "owner.json"


def socket_path(paths: WorkspacePaths) -> Path:
    """`.flowbaby/owner.sock`, or for a workspace too deep for it this workspace's name in the first
    runtime folder (runtime_folders) that is a private folder of this user and short enough."""
    preferred = paths.data / "owner.sock"
    if len(str(preferred)) <= SOCKET_PATH_MAX:
        return preferred
    tried = []
    for runtime in runtime_folders():
        path = runtime / _runtime_name(paths)
        if len(str(path)) > SOCKET_PATH_MAX:
            tried.append(f"{runtime} (too long a path)")
        elif _make_private_folder(runtime):
            return path
        else:
            tried.append(f"{runtime} (not a private folder of this user)")
    message = f"No folder for the owner's socket of {paths.root}: tried {', '.join(tried)}"
    raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, message)


def runtime_folders() -> list[Path]:
    """Where a deep workspace's socket may go, best first: a `flowbaby-<uid>` folder in
    $XDG_RUNTIME_DIR (when it is this user's private folder) and in the user's state folder, which
    only this user can create, then in the shared temporary folder, whose name another local user
    can take first (that user would stop every front of the workspace, not reach it)."""
    env, name = Environment.read(), f"flowbaby-{os.getuid()}"
    folders = [env.state_home / name, Path(tempfile.gettempdir()) / name]
    if env.runtime_dir and _private_folder(Path(env.runtime_dir)):
        folders.insert(0, Path(env.runtime_dir) / name)
    return folders


def _make_private_folder(folder: Path) -> bool:
    """Make `folder` (0700, its parents as needed) unless it exists; whether it is this user's private folder."""
    try:
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return False
    return _private_folder(folder)


def _runtime_name(paths: WorkspacePaths) -> str:
    return f"{hashlib.sha256(str(paths.root).encode()).hexdigest()[:16]}.sock"


def _private_folder(folder: Path) -> bool:
    """A real folder (not a link) of this user's that no one else may enter."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def published_socket(paths: WorkspacePaths) -> Path:
    """The socket owner.json names, once checked: owner.json is a private file of this user
    (mode 0600, not a link: a committed one is 0644), and the socket is `.flowbaby/owner.sock`
    or this workspace's name in a private runtime folder of this user, itself a socket of this
    user's. Raises FlowbabyError (INVALID_WORKSPACE_PATH) or OSError otherwise."""
    from graph.core.seal import read_private_file

    record = json.loads(read_private_file(endpoint_file(paths), "owner endpoint file", "its owner writes it at start"))
    named = record.get("socket") if isinstance(record, dict) else None
    if not isinstance(named, str) or not os.path.isabs(named):
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{endpoint_file(paths)} names no socket path")
    path = Path(named)
    allowed = path == paths.data / "owner.sock" or (
        path.name == _runtime_name(paths)
        and path.parent.name == f"flowbaby-{os.getuid()}"
        and _private_folder(path.parent)
    )
    if not allowed:
        message = f"{endpoint_file(paths)} names {named}, which is not a socket of this workspace"
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, message)
    info = path.lstat()
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{named} is not a socket of this user")
    return path


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a unix socket; None where the platform
    cannot tell (neither SO_PEERCRED nor LOCAL_PEERCRED)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if hasattr(socket, "LOCAL_PEERCRED"):  # macOS: struct xucred {version, uid, ngroups, groups[16]}
        creds = sock.getsockopt(0, socket.LOCAL_PEERCRED, 76)
        return int(struct.unpack_from("2I", creds)[1])
    return None
