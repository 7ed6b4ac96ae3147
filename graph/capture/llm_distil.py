"""An agent session distilled by the workspace's LLM (INGEST_CONTRACT.md 17.3), with the offline
distillation as the fallback for every failure.

Runs in the owning process, never in a hook: litellm is imported on the first LLM capture only
(seconds, once per owner), in the capture's worker thread. The cognee worker child would have
litellm loaded already, but it serves one graph batch at a time and exits when idle, so a capture
routed there would queue behind graph building and need a protocol of its own.

What reaches the LLM: the user's and the agent's text of the new turns only (no tool calls, no
tool output, no system messages), each after `<private>` spans are dropped and secrets redacted
(distil.clean), plus the workspace-relative names of the files the agent edited.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from graph.capture.distil import MAX_DECISIONS, MAX_ITEMS, Distilled, distil
from graph.core.contract import SummaryFields
from graph.core.environment import Environment, export
from graph.core.llm_routes import llm_environment
from graph.core.redaction import clean
from graph.core.settings import LLMSettings
from graph.sessions.model import Message

log = logging.getLogger("flowbaby.capture")

CAPTURE_LLM_ENV = "FLOWBABY_CAPTURE_LLM"
TRANSCRIPT_CHARS = 24_000
"""The newest this many characters of the turns go to the LLM (the start is cut, marked)."""
TURN_CHARS = 4_000
"""One turn's text is cut at this many characters."""

PROMPT = """You turn part of a coding agent's session into one memory for the team's memory store.
Reply with a single JSON object and nothing else, with exactly these keys:
  "topic": a title of at most 80 characters for what the session worked on,
  "context": 2-4 sentences: the goal, what was done, the outcome,
  "decisions": decisions the user or the agent stated (each one self-contained sentence; at most 30),
  "rationale": the reasons given for those decisions (at most 8),
  "openQuestions": questions left open (at most 8),
  "nextSteps": work still to do (at most 8),
  "references": files and paths the session worked on or named (at most 40).
Every value except topic and context is a list of strings; use [] when there is none.
Keep only what the transcript says; never invent. Do not repeat text marked [REDACTED]."""
"""The documented distillation prompt (system message); the transcript is the user message."""

FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.S)


class LLMDistillError(Exception):
    """Why the LLM's summary was not used (the offline distillation is, instead)."""


def llm_capture_enabled(llm: LLMSettings) -> bool:
    """An LLM is configured and FLOWBABY_CAPTURE_LLM is not 0."""
    return not llm.offline and Environment.read().flag(CAPTURE_LLM_ENV)


def transcript(messages: Sequence[Message], edited: Sequence[str]) -> str:
    """The turns' text as the LLM sees it: `<role>: <text>` per turn, cleaned, newest kept."""
    turns = []
    for message in messages:
        if message.role not in ("user", "assistant"):
            continue
        text = "\n".join(clean(block.text)[0] for block in message.blocks if block.kind == "text").strip()
        if text:
            turns.append(f"{message.role}: {text[:TURN_CHARS]}")
    body = "\n\n".join(turns)
    if len(body) > TRANSCRIPT_CHARS:
        body = "[earlier turns cut]\n" + body[-TRANSCRIPT_CHARS:]
    if edited:
        body += "\n\nFiles the agent edited: " + ", ".join(edited)
    return body


def parse_summary(reply: str) -> SummaryFields:
    """The LLM's reply validated with the contract's summary model; LLMDistillError otherwise."""
    try:
        data = json.loads(FENCE.sub("", reply.strip()))
    except ValueError:
        raise LLMDistillError("the LLM's reply is not JSON") from None
    if not isinstance(data, dict):
        raise LLMDistillError("the LLM's reply is not a JSON object")
    try:
        return SummaryFields.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise LLMDistillError(f"the LLM's summary is invalid: {where}: {first['msg']}") from None


def complete(llm: LLMSettings, system: str, user: str, timeout_sec: float) -> str:
    """One chat completion through litellm with the workspace's LLM settings (as the worker maps
    them for cognee), no retries: a failure falls back to the offline distillation at once."""
    export({"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, keep_set=True)  # no cost-map download at import
    import litellm

    env = llm_environment(llm, timeout_sec)
    extra: dict[str, Any] = {}
    if "LLM_ENDPOINT" in env:
        extra["api_base"] = env["LLM_ENDPOINT"]
    if "LLM_API_VERSION" in env:
        extra["api_version"] = env["LLM_API_VERSION"]
    response = litellm.completion(
        model=env["LLM_MODEL"],
        api_key=env["LLM_API_KEY"],
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
        response_format={"type": "json_object"},
        drop_params=True,
        timeout=timeout_sec,
        max_retries=0,
        **extra,
    )
    return str(response.choices[0].message.content or "")


def distil_llm(
    messages: Sequence[Message], *, workspace: str, title: str, agent: str, llm: LLMSettings, timeout_sec: float
) -> Distilled:
    """The LLM's summary of the turns; raises LLMDistillError (or the provider's error)."""
    offline = distil(messages, workspace=workspace, title=title, agent=agent)
    text = transcript(messages, offline.edited)
    if not text.strip():
        raise LLMDistillError("no text to distil")
    summary = parse_summary(complete(llm, PROMPT, text, timeout_sec))

    def scrub(items: list[str], limit: int) -> list[str]:
        kept = [" ".join(clean(item)[0].split()) for item in items]
        return [item for item in kept if item][:limit]

    topic = " ".join(clean(summary.topic)[0].split())[:80] or offline.topic.removeprefix("Session: ")
    mentioned = [ref for ref in scrub(summary.references, 40) if ref not in offline.edited]
    return Distilled(
        topic=f"Session: {topic}",
        context=" ".join(clean(summary.context)[0].split())[:1500] or offline.context,
        decisions=scrub(summary.decisions, MAX_DECISIONS),
        rationale=scrub(summary.rationale, MAX_ITEMS),
        open_questions=scrub(summary.openQuestions, MAX_ITEMS),
        next_steps=scrub(summary.nextSteps, MAX_ITEMS),
        edited=offline.edited,
        mentioned=mentioned,
        redactions=offline.redactions,
        distiller="llm",
    )


def distil_session(
    messages: Sequence[Message],
    *,
    workspace: str,
    title: str,
    agent: str,
    llm: LLMSettings,
    timeout_sec: float,
) -> Distilled:
    """The LLM's distillation when one is configured and it answers a valid summary; otherwise
    the offline one, with the reason in `fallback`."""
    if not llm_capture_enabled(llm):
        return distil(messages, workspace=workspace, title=title, agent=agent)
    try:
        return distil_llm(messages, workspace=workspace, title=title, agent=agent, llm=llm, timeout_sec=timeout_sec)
    except Exception as error:  # noqa: BLE001 (any LLM failure falls back; the reason is kept)
        reason = clean(str(error) if isinstance(error, LLMDistillError) else f"{type(error).__name__}: {error}")[0]
        log.warning("capture: LLM distillation failed, used the offline one (%s)", reason[:300])
        got = distil(messages, workspace=workspace, title=title, agent=agent)
        got.fallback = reason[:300]
        return got
