"""Test-only: put this folder on PYTHONPATH and set FLOWBABY_NETGUARD_LOG to a file, and
every process started that way (bridge, cognee worker) refuses any network connection
or name lookup beyond loopback, writing each attempt to that file."""

import os
import sys

_LOG = os.environ.get("FLOWBABY_NETGUARD_LOG")
_LOOPBACK = ("127.", "::1", "localhost", "0.0.0.0")


def _remote(host: object) -> bool:
    return isinstance(host, str) and bool(host) and not host.startswith(_LOOPBACK)


def _guard(event: str, args: tuple) -> None:
    if event == "socket.connect" and isinstance(args[1], tuple) and _remote(args[1][0]):
        target = args[1][0]
    elif event == "socket.getaddrinfo" and _remote(args[0]):
        target = args[0]
    else:
        return
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {event} {target}\n")
    raise OSError(f"netguard: no network beyond loopback ({target})")


if _LOG:
    sys.addaudithook(_guard)
