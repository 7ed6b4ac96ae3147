"""The command line's cheap way to a workspace's running owner: the standard library alone.

`flowbaby memories`, `search` and `status` answer in well under a second when an owner (a bridge,
`serve` or `mcp`) runs: they send their calls over its socket (graph/owner/wire.py's line protocol),
trusted as the hooks trust it (flowbaby/hook.py `owner_socket`: a private owner.json of this user
naming this workspace's socket, read without following links; the peer is a process of this user),
and never import the engine (pydantic, numpy, networkx: half a second and more). With no owner they
open the workspace themselves (graph.api.open_service).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from flowbaby.hook import OwnerUnavailable, owner_socket, peer_uid
from graph.core.workspace_root import DATA_DIR, shared_root, sharing_note

FROM_ORIGIN = frozenset({"ingest", "store_memory", "retrieve"})
"""The operations that record or read against the caller's folder (its git checkout): sent with the command's."""
CALL_TIMEOUT_SEC = 120.0
"""A call's longest wait: a forget that waits for its graph step waits up to 45 s in the owner."""


class OwnerLine:
    """The part of graph.api.MemoryService the commands call, sent to the running owner over one
    connection. Async like the service, so a command has one code path for both."""

    def __init__(self, conn: socket.socket, origin: Path) -> None:
        self._conn = conn
        self._buffer = b""
        self._ids = 0
        self.origin = str(origin)
        """The folder the command ran for (a worktree, say): retrievals read against its git checkout."""

    @classmethod
    def reach(cls, workspace: str, front: str) -> OwnerLine | None:
        """The owner of `workspace` (after `flowbaby link` and worktrees, as graph.core.workspace
        resolves it), or None when none of this user's answers: the caller then opens it itself."""
        origin = Path(workspace).expanduser().resolve()
        root = shared_root(origin)
        try:
            address = owner_socket(os.path.join(root, DATA_DIR))
        except OwnerUnavailable:
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(5.0)
            conn.connect(address)
            if peer_uid(conn) not in (None, os.getuid()):
                raise OSError(f"{address} is served by another user")
        except OSError:
            conn.close()
            return None
        conn.settimeout(CALL_TIMEOUT_SEC)
        print(f"flowbaby {front}: working through the workspace's running owner", file=sys.stderr)
        note = sharing_note(origin, root)
        if note:
            print(f"flowbaby {front}: {note}", file=sys.stderr)
        return cls(conn, origin)

    def call(self, method: str, **args: Any) -> Any:
        """One call: the result, or OwnerFailure; OwnerUnavailable when the owner goes away meanwhile."""
        self._ids += 1
        line = json.dumps({"id": self._ids, "method": method, "args": args}, ensure_ascii=False)
        try:
            self._conn.sendall(line.encode("utf-8", "backslashreplace") + b"\n")
            while True:
                while b"\n" not in self._buffer:
                    chunk = self._conn.recv(1 << 16)
                    if not chunk:
                        raise OwnerUnavailable("the owner closed the connection")
                    self._buffer += chunk
                raw, self._buffer = self._buffer.split(b"\n", 1)
                reply = json.loads(raw)
                if isinstance(reply, dict) and reply.get("id") == self._ids:  # else an operationEnded event
                    break
        except (OSError, ValueError) as exc:
            raise OwnerUnavailable(f"the owner did not answer {method}: {exc}") from None
        if "result" in reply:
            return reply["result"]
        raise _contract_failure(method, reply)

    async def close(self, grace_sec: float = 0.0, *, hand_on: bool = False) -> None:
        """The owner goes on; only this connection ends."""
        self._conn.close()


async def call_json(service: Any, operation: str, params: Any = None, **kwargs: Any) -> dict[str, Any]:
    """A typed operation with a command's params (None: it takes none), its reply as JSON. Through the owner
    the params go as they are and the owner validates them (so the command imports no pydantic); a service
    of this process gets the contract model (graph.core.methods request_of: validated with the same errors)."""
    if isinstance(service, OwnerLine):
        if operation in FROM_ORIGIN:
            kwargs.setdefault("origin", service.origin)
        return dict(service.call(operation, **kwargs, **({} if params is None else {"request": params})))
    from graph.core.methods import TYPED, request_of

    request = () if params is None else (await request_of(service, TYPED[operation], params),)
    reply = await getattr(service, operation)(*request, **kwargs)
    return dict(reply.model_dump(mode="json"))


def _contract_failure(method: str, reply: dict[str, Any]) -> Exception:
    """The failure an owner's reply carries, as graph.owner.wire.failure_from_wire builds it (a fault, or
    a reply of no known shape: FLOWBABY_ERROR). The contract is imported only now."""
    from graph.core.contract import ErrorCode, FlowbabyError, RetrievalError, RetrievalErrorCode

    failure = reply.get("failure")
    if isinstance(failure, dict):
        details = failure.get("details") or {}
        with contextlib.suppress(KeyError, TypeError, ValueError):
            if failure.get("kind") == "retrieval":
                return RetrievalError(RetrievalErrorCode(failure["code"]), failure["message"], **details)
            return FlowbabyError(ErrorCode(failure["code"]), failure["message"], **details)
    text = reply.get("fault") or reply
    return FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner failed {method}: {text!s:.500}")


async def open_for(front: str, workspace: str, *, build_graph: bool = False) -> Any:
    """The running owner over its socket; else graph.api.open_service's answer (this process owns
    the workspace, or works through an owner that started meanwhile, or the FlowbabyError why not, said
    on stderr as open_service says it: a refused `link.json` or worktree is refused before either)."""
    try:
        line = OwnerLine.reach(workspace, front)
    except Exception as exc:
        from graph.core.contract import FlowbabyError

        if not isinstance(exc, FlowbabyError):
            raise
        print(f"flowbaby {front}: {exc.code.value}: {exc.message}", file=sys.stderr)
        return exc
    if line is not None:
        return line
    from graph.api import open_service

    return await open_service(front, workspace, build_graph=build_graph)


def failure_body(exc: Exception) -> dict[str, Any] | None:
    """The reply body of a contract failure (graph.core.contract.ContractFailure), None for anything else."""
    from graph.core.contract import ContractFailure

    return exc.to_response() if isinstance(exc, ContractFailure) else None
