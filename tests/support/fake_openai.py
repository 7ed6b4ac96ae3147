"""An OpenAI chat-completions server on loopback, for tests and benchmarks.

It answers cognee's structured-output prompts the way a well-behaved LLM would, using
the offline extractor on the prompt it received over HTTP, and reports `usage` like a
real provider. Other modes make it misbehave: `garbage` (unparseable text), `slow`
(answers after `slow_sec`), `429` and `500`; `poison` makes it fail one memory's prompts only.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # graph.cognify.worker.offline_llm imports litellm

from graph.cognify.worker.offline_llm import answer  # noqa: E402
from tests.support.loopback_server import LoopbackServer  # noqa: E402

MODES = ("good", "garbage", "slow", "429", "500")


class FakeOpenAI(LoopbackServer):
    """Start with `with FakeOpenAI() as server:`; `server.url` is the API base (…/v1)."""

    base_path = "/v1"

    def __init__(self, mode: str = "good", slow_sec: float = 30.0) -> None:
        self.mode = mode
        self.slow_sec = slow_sec
        self.poison: str | None = None
        """A word that makes the server answer garbage to any prompt containing it."""
        self.requests: list[dict[str, Any]] = []
        """One entry per POST: the mode it met, the model it asked for and the messages' text."""
        self.reply_for: Callable[[str, str], str | None] | None = None
        """(system, user) -> the content to answer instead of the extractor's, or None; in good mode."""
        self.bodies: list[str] = []
        """Every request body as received (what left the machine, for the redaction tests)."""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        """Sums of the `usage` this server reported in its 200 answers."""
        self._lock = threading.Lock()
        self._closing = threading.Event()
        super().__init__()

    def calls(self, mode: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if mode is None or r["mode"] == mode)

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        super().__exit__(*exc)

    def completion(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Status and JSON body for one chat-completions request."""
        mode = self.mode
        messages = body.get("messages", [])
        said = "\n".join(str(m.get("content", "")) for m in messages)
        with self._lock:
            self.requests.append({"mode": mode, "model": body.get("model"), "text": said})
        if mode == "429":
            return 429, {
                "error": {
                    "message": "Rate limit reached for requests",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            }
        if mode == "500":
            return 500, {"error": {"message": "The server had an error", "type": "server_error"}}
        if mode == "slow" and self._closing.wait(self.slow_sec):
            return 503, {"error": {"message": "shutting down"}}
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        if schema:  # the schema-native route sends the schema beside the prompt, not in it
            system += "\n```json\n" + json.dumps(schema) + "\n```"
        poisoned = self.poison is not None and self.poison in user
        garbage = mode == "garbage" or poisoned
        scripted = self.reply_for(system, user) if self.reply_for is not None and not garbage else None
        content = (
            "Sure! Here is what I found: nodes, edges and a summary." if garbage else scripted or answer(system, user)
        )
        usage = {"prompt_tokens": len((system + user).split()), "completion_tokens": len(content.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        with self._lock:
            self.prompt_tokens += usage["prompt_tokens"]
            self.completion_tokens += usage["completion_tokens"]
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": usage,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._reply(404, {"error": {"message": f"no route {self.path}"}})
                    return
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with server._lock:
                    server.bodies.append(raw.decode("utf-8", "replace"))
                body = json.loads(raw or b"{}")
                self._reply(*server.completion(body))

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its deadline), as a real client would

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
