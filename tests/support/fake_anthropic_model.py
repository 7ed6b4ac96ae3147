"""A scripted Anthropic Messages API on loopback, for driving the real Claude Code offline.

`POST /v1/messages` is answered with a streamed message (message_start, content blocks,
message_delta, message_stop). The next scripted reply is used when the request's last message
is the user's; a tool use is scripted as ("tool", name, input) and answered with a short text
once its result comes back. Every request body is kept."""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback_server import QuietHandler, ScriptedModel


class FakeAnthropicModel(ScriptedModel):
    """`script`: replies still to give: ("text", "...") or ("tool", name, input)."""

    def __init__(self) -> None:
        self.after_tool = "Done."
        """The text that answers a tool's result."""
        self._count = 0
        super().__init__()

    def tool_results(self) -> list[str]:
        blocks = [b for m in self.sent("messages") if isinstance(m.get("content"), list) for b in m["content"]]
        return [json.dumps(b.get("content")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Content blocks of the answer to one request."""
        with self._lock:
            self.requests.append(body)
            self._count += 1
            messages = body.get("messages") or [{}]
            last = messages[-1].get("content")
            after_tool = isinstance(last, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in last
            )
            if not body.get("tools") or after_tool or not self.script:
                return [{"type": "text", "text": self.after_tool if after_tool or not self.script else "Noted."}]
            step = self.script.pop(0)
        if step[0] == "tool":
            return [{"type": "tool_use", "id": f"toolu_{self._count:04d}", "name": step[1], "input": step[2]}]
        return [{"type": "text", "text": str(step[1])}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self.send_json({"data": [], "has_more": False})

            def do_POST(self) -> None:  # noqa: N802
                body = self.json_body()
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_json({"input_tokens": 10})
                    return
                blocks = model.reply(body)
                if not body.get("stream"):
                    self.send_json(_message(body, blocks))
                    return
                events = [
                    ("message_start", {"type": "message_start", "message": {**_message(body, []), "content": []}})
                ]
                for index, block in enumerate(blocks):
                    if block["type"] == "text":
                        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
                    else:
                        start = {**block, "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    events.append(
                        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
                    )
                    events.append(
                        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                    )
                    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                events.append(
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5},
                        },
                    )
                )
                events.append(("message_stop", {"type": "message_stop"}))
                data = b"".join(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode() for name, event in events)
                self.send_whole("text/event-stream", data)

        return Handler


def _message(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "content": blocks,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
