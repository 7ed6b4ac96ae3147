"""A scripted OpenAI Responses API on loopback, for driving the real Codex CLI offline.

`POST /v1/responses` is answered with a streamed response (response.created, output items,
response.completed). Each request takes the next scripted step, until a short text ends the script.
A tool call is scripted as ("tool", name, arguments), `name` matched against the end of the offered
tools' names (Codex puts each MCP server's tools in a namespace tool). Codex starts MCP servers
beside the first request rather than before it: while the scripted tool is not offered yet, the
fake asks for a `sleep 1` command (up to MAX_WAITS times). Every request body is kept."""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback_server import QuietHandler, ScriptedModel

MAX_WAITS = 30


class FakeResponsesModel(ScriptedModel):
    """`script`: steps still to take: ("text", "...") or ("tool", name, arguments)."""

    base_path = "/v1"

    def __init__(self) -> None:
        self.waits = 0
        """Turns spent waiting for a scripted tool the client did not offer yet (a `sleep 1` command each)."""
        super().__init__()

    def tool_outputs(self) -> list[str]:
        """Every function call's output the client sent back."""
        outputs = [item for item in self.sent("input") if item.get("type") == "function_call_output"]
        return [json.dumps(item.get("output")) for item in outputs]

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The output item answering one request."""
        with self._lock:
            self.requests.append(body)
            items = [i for i in body.get("input") or [] if isinstance(i, dict)]
            after_tool = bool(items) and items[-1].get("type") == "function_call_output"
            if not self.script or not body.get("tools"):
                return _text("Done." if after_tool or not self.script else "Noted.")
            step = self.script.pop(0)
        if step[0] != "tool":
            return _text(str(step[1]))
        # (namespace, name): Codex groups each MCP server's tools in a namespace tool (`mcp__<server>`)
        names = [
            (str(t.get("name")) if t.get("type") == "namespace" else "", str(inner.get("name") or ""))
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for inner in (t.get("tools") or [] if t.get("type") == "namespace" else [t])
            if isinstance(inner, dict)
        ]
        found = next((n for n in names if n[1].endswith(str(step[1]))), None)
        if found is None and self.waits < MAX_WAITS:  # Codex starts MCP servers beside the turn, not before it
            with self._lock:
                self.script.insert(0, step)
                self.waits += 1
            return _call("", "exec_command", {"cmd": "sleep 1"})
        namespace, name = found or ("", str(step[1]))
        return _call(namespace, name, step[2])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                self.send_json({"object": "list", "data": [], "models": []})

            def do_POST(self) -> None:  # noqa: N802
                body = self.json_body()
                if not self.path.rstrip("/").endswith("/responses"):
                    self.not_found()
                    return
                item = model.reply(body)
                response = {"id": f"resp_{uuid.uuid4().hex[:12]}", "object": "response", "status": "in_progress"}
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 5,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                }
                events: list[dict[str, Any]] = [
                    {"type": "response.created", "response": response},
                    {"type": "response.output_item.added", "output_index": 0, "item": item},
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                    {
                        "type": "response.completed",
                        "response": {**response, "status": "completed", "output": [item], "usage": usage},
                    },
                ]
                data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
                self.send_whole("text/event-stream", data)

        return Handler


def _call(namespace: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        **({"namespace": namespace} if namespace else {}),
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex[:12]}",
        "call_id": f"call_{uuid.uuid4().hex[:12]}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def _text(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:12]}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
