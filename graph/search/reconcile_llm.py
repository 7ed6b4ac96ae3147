"""The reconcile decision asked of the workspace's LLM (issue 50 item 2), as mem0 asks it: the new
memory and its measured candidates go to the LLM, which picks add, update, replace or skip. Any
failure (no answer in time, not JSON, an unknown action or candidate) keeps the offline decision,
with the reason in `llm_fallback`. The evidence recorded is the same measured evidence either way.

On only with FLOWBABY_RECONCILE_LLM=1 and an LLM configured: it runs before the write's reply, so it
costs the reply an LLM round trip (bounded by FLOWBABY_RECONCILE_LLM_TIMEOUT_SEC, default 8 s).
What reaches the LLM: the new memory's topic and decisions and the candidates' (already redacted
at ingest), nothing else.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from graph.core.environment import Environment
from graph.core.memories import Memory
from graph.core.redaction import clean
from graph.core.settings import LLMSettings
from graph.search.reconcile import ACTIONS, SUGGEST_COSINE, Candidate, Decision, subject_text

log = logging.getLogger("flowbaby.reconcile")

ENABLE_ENV = "FLOWBABY_RECONCILE_LLM"
TIMEOUT_ENV = "FLOWBABY_RECONCILE_LLM_TIMEOUT_SEC"
ASKED = 5
"""Candidates shown to the LLM at most (best cosine first)."""

PROMPT = """You keep a software team's memory store true. A new memory is about to be stored. Below it are
live memories that may be about the same subject, numbered from 1. Reply with one JSON object and nothing else:
{"decision": "add" | "update" | "replace" | "skip", "candidate": <number> or null, "reason": "<one sentence>"}
- skip: the new memory says the same as the candidate (a repeat);
- update: the same subject as the candidate, refined or restated, nothing it decided is replaced;
- replace: the new memory replaces what the candidate decided (the candidate is no longer true);
- add: no candidate is the same subject. A memory that only shares a name or a word with the new one
  (the search index kept in Elasticsearch when the logs move off Elasticsearch) is NOT the same subject.
When unsure, answer add."""


def llm_enabled(llm: LLMSettings) -> bool:
    return Environment.read().flag(ENABLE_ENV, default=False) and not llm.offline


def timeout_sec() -> float:
    try:
        return max(0.5, Environment.read().seconds(TIMEOUT_ENV, 8.0))
    except ValueError:
        return 8.0


def worth_asking(offline: Decision) -> bool:
    """Only a write with a candidate on (or near) its subject costs an LLM call."""
    return any(c.cosine >= SUGGEST_COSINE or c.retired for c in offline.candidates)


def prompt_text(new: Memory, candidates: list[Candidate]) -> str:
    lines = [f"New memory: {subject_text(new)}", "", "Live memories:"]
    lines += [f"{i}. {subject_text(c.memory)}" for i, c in enumerate(candidates, 1)]
    return "\n".join(lines)


def parse(reply: str, candidates: list[Candidate]) -> tuple[str, Candidate | None, str]:
    """(action, candidate, reason) from the LLM's reply; ValueError when it is not usable."""
    text = reply.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("decision") not in ACTIONS:
        raise ValueError("the LLM's reply names no decision")
    action = str(data["decision"])
    number = data.get("candidate")
    if action == "add":
        return action, None, str(data.get("reason", ""))[:300]
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= len(candidates):
        raise ValueError(f"the LLM named no listed candidate for {action}")
    return action, candidates[number - 1], str(data.get("reason", ""))[:300]


def ask(
    new: Memory,
    offline: Decision,
    llm: LLMSettings,
    complete: Callable[[LLMSettings, str, str, float], str] | None = None,
) -> Decision:
    """The LLM's decision among the offline decision's candidates, or the offline one with the reason."""
    candidates = offline.candidates[:ASKED]
    try:
        if complete is None:
            from graph.capture.llm_distil import complete as complete_with_litellm

            complete = complete_with_litellm
        action, target, reason = parse(complete(llm, PROMPT, prompt_text(new, candidates), timeout_sec()), candidates)
    except Exception as error:  # noqa: BLE001 (any LLM failure keeps the offline decision; the reason is kept)
        offline.llm_fallback = clean(f"{type(error).__name__}: {error}")[0][:300]
        log.warning("reconcile: the LLM's decision was not used (%s)", offline.llm_fallback)
        return offline
    chosen: Any = action
    return Decision(
        chosen,
        target,
        reason or f"the LLM chose {action}",
        decided_by="llm",
        suggestions=[] if target else offline.suggestions,
        candidates=offline.candidates,
    )
