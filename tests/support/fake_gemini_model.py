"""A scripted Gemini API (generateContent / streamGenerateContent) on loopback, for driving the
real Gemini CLI offline (GOOGLE_GEMINI_BASE_URL).

The next scripted step is used when the request's last content is the user's text; a tool call is
scripted as ("tool", name, args), `name` matched against the end of the declared function names,
and answered with a short text once its functionResponse comes back. Requests with no tools (the
CLI's own routing and summary calls) get a short text. Every generation request body is kept."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback_server import QuietHandler, ScriptedModel


class FakeGeminiModel(ScriptedModel):
    """`script`: steps still to take: ("text", "...") or ("tool", name, args)."""

    def with_tools(self) -> list[dict[str, Any]]:
        """The agent's own requests (those that declare tools), in order."""
        with self._lock:
            return [body for body in self.requests if body.get("tools")]

    def function_responses(self) -> list[str]:
        parts = [part for content in self.sent("contents") for part in content.get("parts") or []]
        answered = [part for part in parts if isinstance(part, dict) and "functionResponse" in part]
        return [json.dumps(part["functionResponse"]) for part in answered]

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The part answering one request."""
        with self._lock:
            self.requests.append(body)
            contents = body.get("contents") or [{}]
            last = contents[-1].get("parts") or []
            after_tool = any(isinstance(p, dict) and "functionResponse" in p for p in last)
            if after_tool or not self.script or not body.get("tools"):
                return {"text": "Done." if after_tool or not self.script else "Noted."}
            step = self.script.pop(0)
        if step[0] != "tool":
            return {"text": str(step[1])}
        names = [
            str(f.get("name") or "") for tool in body.get("tools") or [] for f in tool.get("functionDeclarations") or []
        ]
        name = next((n for n in names if n.endswith(str(step[1]))), str(step[1]))
        return {"functionCall": {"name": name, "args": step[2]}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                self.send_json({"models": []})

            def do_POST(self) -> None:  # noqa: N802
                body = self.json_body()
                path = self.path.split("?", 1)[0]
                if path.endswith(":countTokens"):
                    self.send_json({"totalTokens": 10})
                    return
                if not path.endswith((":generateContent", ":streamGenerateContent")):
                    self.not_found()
                    return
                part = model.reply(body)
                answer = {
                    "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                    "modelVersion": "fake",
                }
                if path.endswith(":streamGenerateContent"):
                    self.send_whole("text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode())
                else:
                    self.send_json(answer)

        return Handler
