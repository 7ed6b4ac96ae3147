"""The offline extractor behind litellm's CustomLLM interface.

cognee asks its LLM for structured output by putting the wanted pydantic model's
JSON schema in the system prompt (litellm_native's JSON path). This handler reads
which model is wanted from that schema and answers with JSON built by
graph.extract.extractor, so cognee's own pipeline (chunking, extraction, summaries,
embedding, storage) runs unchanged with no LLM at all.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from graph.extract.extractor import extract_graph, summarize

_TITLE = re.compile(r'"title"\s*:\s*"(\w+)"')


def _wanted_model(system_prompt: str) -> str | None:
    """The outermost schema title: the last top-level "title" in a pydantic schema dump."""
    if "```json" not in system_prompt:
        return None
    schema_text = system_prompt.split("```json", 1)[1].split("```", 1)[0]
    try:
        schema = json.loads(schema_text)
    except json.JSONDecodeError:
        titles = _TITLE.findall(schema_text)
        return titles[-1] if titles else None
    title = schema.get("title")
    return title if isinstance(title, str) else None


def answer(system_prompt: str, user_text: str) -> str:
    """The JSON (or plain text) an LLM would have returned for this cognee prompt."""
    wanted = _wanted_model(system_prompt)
    if wanted == "KnowledgeGraph":
        graph = extract_graph(user_text)
        nodes = [{k: n[k] for k in ("id", "name", "type", "description")} for n in graph["nodes"]]
        return json.dumps({"nodes": nodes, "edges": graph["edges"]})
    if wanted == "SummarizedContent":
        return json.dumps({"summary": summarize(user_text), "description": ""})
    if wanted is None:
        return summarize(user_text)
    # A schema the extractor does not know: an empty object fails validation loudly in
    # cognee rather than inventing content.
    return "{}"


class OfflineExtractorLLM(CustomLLM):
    """litellm custom provider `flowbaby-local`."""

    def _respond(self, messages: list[dict[str, Any]], model: str) -> ModelResponse:
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        content = answer(system, user)
        return litellm.ModelResponse(
            model=model,
            created=int(time.time()),
            choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        )

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._respond(messages, model)

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._respond(messages, model)
