"""What the fake model APIs share: a threaded HTTP server on a free loopback port that `with`
starts and stops; each fake gives its request handler."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    base_path = ""
    """What follows the port in `url` (an API's base, such as /v1)."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.base_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
