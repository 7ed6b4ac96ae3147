"""How a front gets its workspace's service (own it, work through its owner, or a team server), and the
workspace-level commands that need no open service (token store, settings; adopt: graph.engine.adoption)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TypeVar

from graph.backends.backend import backend_class
from graph.core.api_tokens import TokenStore
from graph.core.contract import ContractFailure, ErrorCode, FlowbabyError
from graph.core.service_protocol import MemoryService
from graph.core.settings import load_settings
from graph.core.workspace import WorkspacePaths, resolve_workspace
from graph.core.workspace_root import sharing_note
from graph.engine.service import FlowbabyService
from graph.owner.client import OwnerClient, OwnerGone
from graph.remote import REMOTE_FRONTS, open_remote_service

_Opened = TypeVar("_Opened", FlowbabyService, OwnerClient)

EXIT_WORKSPACE_UNAVAILABLE = 3
"""Exit code of a front that could not own its workspace (busy, missing, not writable)."""


async def open_service(
    front: str,
    workspace: str | os.PathLike[str] | None,
    rate_limit_per_minute: int | None = None,
    *,
    build_graph: bool = True,
) -> MemoryService | FlowbabyError:
    """The workspace for a front: owned here if no process owns it, else through its owner
    (this front takes it over when the owner leaves). Otherwise say on stderr why not and
    return the error; the front then exits with EXIT_WORKSPACE_UNAVAILABLE. build_graph=False:
    a one-call command that owns the workspace leaves the graph work to the finisher or the
    next start (FlowbabyService.open)."""

    async def own() -> FlowbabyService:
        return await FlowbabyService.open(
            workspace, rate_limit_per_minute=rate_limit_per_minute, build_graph=build_graph
        )

    if front in REMOTE_FRONTS:  # a workspace pointed at a team server (graph.remote) is served there
        try:
            remote = await open_remote_service(workspace)
        except FlowbabyError as error:
            print(f"flowbaby {front}: {error.code.value}: {error.message}", file=sys.stderr)
            return error
        if remote is not None:
            server = remote.server
            print(f"flowbaby {front}: served by {server.url} (namespace {server.namespace})", file=sys.stderr)
            return remote
    try:
        try:
            return _said_where(front, workspace, await own())
        except OSError as exc:  # a full disk or a read-only folder at start-up
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Cannot open the workspace: {exc}") from None
    except FlowbabyError as error:
        if error.code is ErrorCode.WORKSPACE_BUSY:
            with contextlib.suppress(OwnerGone):
                client = await OwnerClient.connect(resolve_workspace(workspace), own)
                client.origin = str(Path(os.fspath(workspace)).expanduser().resolve()) if workspace else None
                print(
                    f"flowbaby {front}: pid {error.details.get('ownerPid')} owns the workspace; working through it",
                    file=sys.stderr,
                )
                return _said_where(front, workspace, client)
        print(f"flowbaby {front}: {error.code.value}: {error.message}", file=sys.stderr)
        return error


def _said_where(front: str, workspace: str | os.PathLike[str] | None, service: _Opened) -> _Opened:
    """`service`, once stderr says which workspace it opened when that is not the folder given (a worktree's
    main checkout, a `flowbaby link` target): a person who opened a folder sees whose memory answers."""
    if workspace is not None:
        note = sharing_note(Path(os.fspath(workspace)).expanduser().resolve(), service.paths.root)
        if note:
            print(f"flowbaby {front}: {note}", file=sys.stderr)
    return service


async def start_watching(service: MemoryService, front: str) -> None:
    """Ask for session watching. A failure (an owner that faults) is said on stderr, never
    fatal: the front still serves everything else."""
    try:
        await service.watch_sessions()
    except ContractFailure as error:
        print(f"flowbaby {front}: sessions are not watched: {error.code.value}: {error.message}", file=sys.stderr)


def agent_forget_enabled(paths: object) -> bool:
    """FLOWBABY_AGENT_FORGET=1 in the workspace's settings: agents get the forget tool (MCP)."""
    if not isinstance(paths, WorkspacePaths):
        return False
    try:
        return load_settings(paths).agent_forget
    except (FlowbabyError, OSError, UnicodeDecodeError):
        return False


def open_token_store(url: str) -> TokenStore:
    """The per-user tokens of the shared database at `url` (the team's: schema flowbaby_admin)."""
    return backend_class(url).token_store(url)
