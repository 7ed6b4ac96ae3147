"""Local fronts on a team server: where it is (settings) and the service over its HTTP API (client)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from graph.core.workspace import resolve_workspace
from graph.remote.settings import server_settings

if TYPE_CHECKING:
    from graph.remote.client import RemoteService

REMOTE_FRONTS = frozenset({"bridge", "mcp", "import", "search"})
"""Fronts that forward to a configured team server (`import`: `flowbaby import adr|docs`, whose
records belong where the bridge's memories are; `search`: the retrieval the agents get there);
`serve` always serves its own store."""


async def open_remote_service(workspace: str | os.PathLike[str] | None) -> RemoteService | None:
    """The workspace's team server as a service, or None when none is configured. httpx is
    imported only then, so a local bridge starts as before."""
    paths = resolve_workspace(workspace)
    server = server_settings(paths)
    if server is None:
        return None
    from graph.remote.client import RemoteService

    return await RemoteService.open(paths, server)


def connect_workspace(
    workspace: str, url: str | None, token_file: str | None, namespace: str | None
) -> dict[str, str | bool]:
    """`flowbaby connect`: point the workspace at a team server (url and token file), or back at
    its own folder (url None). The server is not contacted here; the next front start checks it."""
    from graph.remote.settings import forget_server, write_server_file

    paths = resolve_workspace(workspace)
    if url is None:
        return {"workspace": str(paths.root), "server": "", "removed": forget_server(paths)}
    if not token_file:
        from graph.core.contract import ErrorCode, FlowbabyError

        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, "connect needs --token-file (a 0600 file holding the token)")
    server = write_server_file(paths, url, token_file, namespace)
    return {"workspace": str(paths.root), "server": server.url, "namespace": server.namespace, "file": server.source}
