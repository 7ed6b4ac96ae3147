"""An agent session's turns distilled into a summary, offline: plain rules, no model.

Decisions are the sentences of the user's and the agent's text that state one ("let's use",
"we decided", "from now on", "switch to"...), questions excluded. References are the files
the agent's edit and write tool calls touched (first), then the paths named in the
conversation. Open questions and next steps come from their own cue words. Requests to store,
acknowledgements and talk about flowbaby are no decisions (graph/capture/chatter.py). Text between
`<private>` and `</private>` is dropped before anything is read, and secrets are redacted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from graph.capture.chatter import is_chatter
from graph.core.redaction import clean
from graph.core.sentences import sentences
from graph.sessions.model import Message

EDIT_TOOLS = frozenset(
    {"write", "edit", "multiedit", "notebookedit", "patch", "apply_patch", "str_replace_based_edit_tool", "create"}
)
"""Tool calls (case-insensitive) whose input names a file the agent edited or created."""
MAX_DECISIONS = 30
MAX_ITEMS = 8
MAX_REFERENCES = 40
SENTENCE_CHARS = (12, 400)

DECISION_CUES = re.compile(
    r"\b(?:decid(?:e|ed|ing)|decision|let'?s \w+|let us \w+|we(?:'ll| will| are going to| should| must| shall) \w+"
    r"|(?:go|going|went) with|settled on|agreed|(?:we|i) chose|chosen|from now on|going forward"
    r"|(?:always|never) (?:use|run|call|commit|push|deploy|store|put|log|write)|switch(?:ed|ing)? (?:to|from)"
    r"|instead of|(?:we|i) prefer|the plan is|pinned? (?:to|at)|standardi[sz]ed? on)\b",
    re.I,
)
"""A sentence stating a decision: "let's <verb>", "we will <verb>", "decided", "from now on"... (tuned once on
tests/bench/hooks_set.py: the first list named the verbs after "let's" and "we will", and missed 10 of 27)."""
OPEN_CUES = re.compile(r"\b(?:open question|not sure|unclear|undecided|tbd|to be decided|unknown whether)\b", re.I)
NEXT_CUES = re.compile(
    r"\b(?:next step|next,|next we|then we|todo|to do:|follow[- ]up|still need|remaining|later we|we need to"
    r"|should next|next time|afterwards we)\b",
    re.I,
)
PATH = re.compile(
    r"(?<![\w.~/\\-])(?:\.\.?/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b|(?<![\w./-])[\w-]+\.(?:py|ts|tsx|js|jsx|json|md|toml|yaml|yml|rs|go|java|rb|sh|sql|css|html|cfg|ini|txt)\b"
)
PATCH_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: (\S+)")


@dataclass
class Distilled:
    topic: str
    context: str
    decisions: list[str] = field(default_factory=list)
    rationale: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    redactions: int = 0
    distiller: str = "offline"
    """Who wrote the summary: `offline` (these rules) or `llm` (graph/capture/llm_distil.py)."""
    fallback: str | None = None
    """Why the configured LLM's summary was not used, when it was not."""

    @property
    def references(self) -> list[str]:
        return _unique([*self.edited, *self.mentioned])[:MAX_REFERENCES]


def distil(messages: Iterable[Message], *, workspace: str, title: str = "", agent: str = "agent") -> Distilled:
    """A summary of the given turns (user, assistant and tool messages; system ones are skipped)."""
    said: list[str] = []
    first_user = last_user = ""
    edited: list[str] = []
    redactions = 0
    for message in messages:
        for block in message.blocks:
            if block.kind == "tool_call" and block.tool.casefold() in EDIT_TOOLS:
                edited.extend(_edited_paths(block.text, workspace))
            if block.kind != "text" or message.role not in ("user", "assistant"):
                continue
            text, hits = clean(block.text)
            redactions += hits
            if not text.strip():
                continue
            said.append(text)
            if message.role == "user":
                first_user = first_user or text
                last_user = text
    decisions, rationale, open_questions, next_steps, mentioned = [], [], [], [], []
    for text in said:
        for line in text.splitlines():
            for sentence in sentences(line):
                piece = " ".join(sentence.split())
                if not SENTENCE_CHARS[0] <= len(piece) <= SENTENCE_CHARS[1]:
                    mentioned.extend(_named_paths(piece, workspace))
                    continue
                mentioned.extend(_named_paths(piece, workspace))
                if OPEN_CUES.search(piece):
                    open_questions.append(piece)
                elif piece.endswith("?") or is_chatter(piece):
                    continue  # a question decides nothing; nor does asking for, or reporting, a store
                elif DECISION_CUES.search(piece):
                    decisions.append(piece)
                    if re.search(r"\b(?:because|since|so that|due to|as it)\b", piece, re.I):
                        rationale.append(piece)
                elif NEXT_CUES.search(piece):
                    next_steps.append(piece)
    headline = " ".join((clean(title)[0] or first_user or "agent session").split())[:80]  # a title is user text
    context = f"Captured from a {agent} session."
    if first_user:
        context += f" The user asked: {_short(first_user, 500)}"
    if last_user and last_user != first_user:
        context += f" Latest request: {_short(last_user, 400)}"
    return Distilled(
        topic=f"Session: {headline}",
        context=context[:1500],
        decisions=_unique(decisions)[-MAX_DECISIONS:],
        rationale=_unique(rationale)[-MAX_ITEMS:],
        open_questions=_unique(open_questions)[-MAX_ITEMS:],
        next_steps=_unique(next_steps)[-MAX_ITEMS:],
        edited=_unique(edited),
        mentioned=[p for p in _unique(mentioned) if p not in edited],
        redactions=redactions,
    )


def normal(text: str) -> str:
    """A decision's identity for de-duplication: lower case, words only."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _edited_paths(text: str, workspace: str) -> list[str]:
    found = PATCH_FILE.findall(text)
    if not found and text.strip() and "\n" not in text.strip() and not text.lstrip().startswith(("{", "[")):
        found = [text.strip()]
    return [_relative(path, workspace) for path in found]


def _named_paths(text: str, workspace: str) -> list[str]:
    return [_relative(match.group(0), workspace) for match in PATH.finditer(text)]


def _relative(path: str, workspace: str) -> str:
    if os.path.isabs(path):
        inside = os.path.relpath(path, workspace)
        if not inside.startswith(".."):
            return inside
    return path.removeprefix("./")


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for item in items:
        key = normal(item)
        if key and key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
