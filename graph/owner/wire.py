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
from graph.core.workspace import WorkspacePaths

OWNER_METHODS = frozenset(
    {
        "implied_supersessions",
        "confirm_supersession",
        "health",
        "ingest",
        "store_memory",
        "background_status",
        "retrieve",
        "index_status",
        "repair",
        "memory_context",
        "memory_versions",
        "search_chunks",
        "graph_snapshot",
        "graph_summary",
        "audit_tail",
        "sessions",
        "watch_sessions",
    }
)
"""The service methods a front may call through the owner: the whole API the fronts use."""

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
    preferred = paths.data / "owner.sock"
    if len(str(preferred)) <= SOCKET_PATH_MAX:
        return preferred
    runtime = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"flowbaby-{os.getuid()}"
    runtime.mkdir(mode=0o700, exist_ok=True)
    info = runtime.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or runtime.is_symlink():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{runtime} is not a private folder of this user")
    return runtime / f"{hashlib.sha256(str(paths.root).encode()).hexdigest()[:16]}.sock"
