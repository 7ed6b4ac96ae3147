"""Which team server, if any, a local front forwards its workspace to, and with which token.

A workspace points at a server by the process environment (FLOWBABY_SERVER_URL with
FLOWBABY_SERVER_TOKEN or FLOWBABY_SERVER_TOKEN_FILE, as the VS Code extension passes them) or by
`.flowbaby/server.json`, written by `flowbaby connect`. In the spirit of graph.core.trust, nothing a
cloned repository could have written decides where memories go or which token is sent: the
server URL and token are never read from the workspace `.env`; `server.json` counts only if
`flowbaby connect` wrote it in this folder (its seal, graph.core.seal: a committed one has none,
whatever mode git gave it), and it and the token file only as regular files of this user's with
mode 0600 that are not symlinks. `server.json` names the token file; it holds no token,
and the token file must hold one token and nothing else (one line in the bearer-token alphabet of
RFC 6750), so a setting pointed at another private file (`~/.git-credentials`, a key) sends nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from graph.backends.backend import namespace_for
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.environment import Environment
from graph.core.net import is_loopback
from graph.core.seal import read_private_file, read_sealed_file, seal_path, write_sealed_file
from graph.core.workspace import WorkspacePaths

SERVER_URL_ENV = "FLOWBABY_SERVER_URL"
SERVER_TOKEN_ENV = "FLOWBABY_SERVER_TOKEN"
SERVER_TOKEN_FILE_ENV = "FLOWBABY_SERVER_TOKEN_FILE"
SERVER_NAMESPACE_ENV = "FLOWBABY_SERVER_NAMESPACE"
SERVER_FILE = "server.json"
SERVER_PURPOSE = "server-settings"
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]{1,4096}=*")
"""A bearer token as RFC 6750 spells one (b64token): `fbt_<id>_<secret>`, or a shared API token."""


@dataclass(frozen=True)
class ServerSettings:
    """A team server: its base URL (no trailing slash), the bearer token, the namespace sent in
    X-Flowbaby-Namespace, and where the settings came from (for messages; never the token)."""

    url: str
    token: str
    namespace: str
    source: str


def server_file(paths: WorkspacePaths) -> Path:
    return paths.data / SERVER_FILE


def check_url(url: str) -> str:
    """An http(s) base URL; plain http only to loopback (the token and every memory cross the wire)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The team server URL must be http(s)://host[:port], got {url!r}")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"Refusing plain http to {parts.hostname}: the token and memories would cross the network in clear; "
            "use https",
        )
    return url.strip().rstrip("/")


def check_namespace(namespace: str) -> str:
    if not _NAMESPACE.match(namespace):
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            "A namespace is 1-48 characters of a-z, 0-9, _ and -, starting with a letter or digit",
        )
    return namespace


def _token_from_file(path: str) -> str:
    token = read_private_file(Path(path).expanduser(), "server token file").strip()
    if not token:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The server token file {path} is empty")
    if not _TOKEN.fullmatch(token):  # the content is never echoed: it may be someone's password
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"Refusing the server token file {path}: it does not hold a single bearer token "
            "(one line of A-Z a-z 0-9 - . _ ~ + / and trailing =), so nothing was sent",
        )
    return token


def server_settings(paths: WorkspacePaths) -> ServerSettings | None:
    """The workspace's team server, or None to serve it locally. The environment wins over server.json."""
    environment = Environment.read()
    url = environment.get(SERVER_URL_ENV).strip()
    if url:
        token_file = environment.get(SERVER_TOKEN_FILE_ENV).strip()
        token = _token_from_file(token_file) if token_file else environment.get(SERVER_TOKEN_ENV).strip()
        if not token:
            raise FlowbabyError(
                ErrorCode.FLOWBABY_ERROR,
                f"{SERVER_URL_ENV} is set but neither {SERVER_TOKEN_FILE_ENV} nor {SERVER_TOKEN_ENV} gives a token",
            )
        namespace = environment.get(SERVER_NAMESPACE_ENV).strip() or namespace_for(paths)
        return ServerSettings(check_url(url), token, check_namespace(namespace), f"{SERVER_URL_ENV} (environment)")
    path = server_file(paths)
    if not os.path.lexists(path):
        return None
    try:
        remedy = "remove it, or run `flowbaby connect` again"
        record = json.loads(read_sealed_file(path, SERVER_PURPOSE, paths.root, "server settings", remedy))
        url, token_file, namespace = record["url"], record["tokenFile"], record["namespace"]
    except (ValueError, KeyError, TypeError):
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR, f"{path} is not a flowbaby server settings file; run flowbaby connect again"
        ) from None
    return ServerSettings(check_url(url), _token_from_file(token_file), check_namespace(namespace), str(path))


def write_server_file(paths: WorkspacePaths, url: str, token_file: str, namespace: str | None) -> ServerSettings:
    """`flowbaby connect`: check the settings, then write server.json (0600, replacing any before)."""
    token_path = str(Path(token_file).expanduser().resolve())
    settings = ServerSettings(
        check_url(url),
        _token_from_file(token_path),
        check_namespace(namespace or namespace_for(paths)),
        str(server_file(paths)),
    )
    record = {"url": settings.url, "tokenFile": token_path, "namespace": settings.namespace}
    write_sealed_file(server_file(paths), SERVER_PURPOSE, paths.root, json.dumps(record, indent=2) + "\n")
    return settings


def forget_server(paths: WorkspacePaths) -> bool:
    """`flowbaby connect --local`: serve the workspace from its own folder again."""
    with contextlib.suppress(FileNotFoundError):
        seal_path(server_file(paths)).unlink()
    try:
        server_file(paths).unlink()
    except FileNotFoundError:
        return False
    return True
