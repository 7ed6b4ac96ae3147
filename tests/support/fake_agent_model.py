"""A scripted OpenAI-compatible chat model on loopback, for driving real agent clients (OpenCode).

It streams chat-completion chunks. A request that lists tools and ends with the user's message is
answered with the next scripted tool call (matched by the end of the tool's name, since clients
prefix MCP tools with their server's name); any other request (a title request, or the turn after a
tool result) gets a short text answer, unless that tool result says the index is still loading:
then the model asks again, as the skill tells agents to. Every request body is kept, so a test can read what the
client sent back in its `role: "tool"` messages.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback_server import QuietHandler, ScriptedModel

RETRY_WHEN = ("NOT_INITIALIZED", "BRIDGE_TIMEOUT")
"""Tool errors after which the model repeats its call (a cold start on a busy machine)."""


class FakeAgentModel(ScriptedModel):
    """`script`: tool calls still to make, in order: (tool name suffix, arguments)."""

    base_path = "/v1"

    def __init__(self) -> None:
        self.last_call: dict[str, str] | None = None
        self.after_tool = "Done."
        """The text that answers a tool's result (and any other request without a scripted call)."""
        super().__init__()

    def tool_messages(self) -> list[str]:
        """The text of every tool result the client sent back to the model."""
        contents = [message.get("content") for message in self.sent("messages") if message.get("role") == "tool"]
        return [content if isinstance(content, str) else json.dumps(content) for content in contents]

    def tool_names(self) -> set[str]:
        with self._lock:
            return {t["function"]["name"] for body in self.requests for t in body.get("tools") or []}

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The stream's chunks for one request."""
        with self._lock:
            self.requests.append(body)
            messages = body.get("messages") or [{}]
            tools = [t["function"]["name"] for t in body.get("tools") or []]
            call = None
            last = messages[-1]
            if last.get("role") == "tool" and str(last.get("content")).startswith(RETRY_WHEN) and self.last_call:
                call = self.last_call
            elif tools and last.get("role") == "user" and self.script:
                suffix, arguments = self.script[0]
                exact = suffix if suffix in tools else None  # "write", not "todowrite"
                name = exact or next((t for t in tools if t.endswith(suffix)), None)
                if name is not None:
                    self.script.pop(0)
                    call = {"name": name, "arguments": json.dumps(arguments)}
            if call is not None:
                self.last_call = call
        if call is None:
            return [
                {"role": "assistant", "content": self.after_tool},
                {"finish_reason": "stop"},
            ]
        tool_call = {"index": 0, "id": f"call_{len(self.requests)}", "type": "function", "function": call}
        return [{"role": "assistant", "tool_calls": [tool_call]}, {"finish_reason": "tool_calls"}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 (model listings)
                self.send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = self.json_body()
                chunks = model.answer(body)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for part in chunks:
                    finish = part.pop("finish_reason", None)
                    choice = {"index": 0, "delta": part, "finish_reason": finish}
                    event = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0}
                    event |= {"model": body.get("model", "fake-model"), "choices": [choice]}
                    if finish:
                        event["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler
