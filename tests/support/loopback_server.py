"""What the fake model APIs share: a threaded HTTP server on a free loopback port that `with`
starts and stops, a quiet request handler that reads a JSON body and sends a whole reply, and (for
the fakes that drive real agent clients) the script of steps and the kept request bodies; each fake
gives its handler and its API's wording of a reply."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


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


class QuietHandler(BaseHTTPRequestHandler):
    """A fake API's request handler: no access log on the test's output, and the request and reply
    plumbing every fake repeats (its routes are its own)."""

    def log_message(self, *args: object) -> None:
        pass

    def json_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length", 0))
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return body

    def send_whole(self, kind: str, data: bytes, status: int = 200) -> None:
        """One reply with its length (so an HTTP/1.1 client can keep the connection)."""
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, payload: dict[str, Any], status: int = 200) -> None:
        self.send_whole("application/json", json.dumps(payload).encode(), status)

    def not_found(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


class ScriptedModel(LoopbackServer):
    """A fake model that a real agent client talks to: each test appends the steps it wants (a tool
    call, a text) to `script`, and reads back every request body the client sent (`requests`), both
    guarded by `_lock` since the server answers on its own threads."""

    def __init__(self) -> None:
        self.script: list[tuple[Any, ...]] = []
        """Steps still to take, in order; each fake's docstring says their form."""
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__()

    def sent(self, key: str) -> list[dict[str, Any]]:
        """Every object of the `key` list (messages, contents, input items) of every kept request, in order:
        where each fake finds what the client sent back, such as a tool's result."""
        with self._lock:
            return [item for body in self.requests for item in body.get(key) or [] if isinstance(item, dict)]
