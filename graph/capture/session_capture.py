"""One capture of an agent session: read its turns since the last capture, distil them, and
decide what to stage (a new version of the session's own topic) or why nothing.

The session's topicId is stable (`session-<source>-<hash of the session id>`), so each later
capture is a new version of the same topic, holding the earlier captures' decisions and
references plus the new turns'. `.flowbaby/captures.json` keeps, per session, how many turns
were captured; it is advanced even when a capture stores nothing, so the same turns are never
distilled twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graph.capture.chatter import covered, is_chatter, own_stores
from graph.capture.distil import MAX_DECISIONS, MAX_REFERENCES, Distilled, distil, normal
from graph.core.contract import CaptureRequest, MemoryStatus, utc_now
from graph.core.environment import Environment
from graph.core.files import write_atomic
from graph.core.memories import Memory
from graph.sessions.model import Message, SessionInfo, SourceError, within
from graph.sessions.sources.claude_code import ClaudeCodeSource
from graph.sessions.sources.claude_code import default_folder as claude_folder
from graph.sessions.sources.codex import CodexSource
from graph.sessions.sources.codex import default_folder as codex_folder
from graph.sessions.sources.gemini import GeminiSource
from graph.sessions.sources.gemini import default_folder as gemini_folder
from graph.sessions.sources.opencode import OpenCodeSource
from graph.sessions.sources.opencode import default_folder as opencode_folder

CAPTURE_ENV = "FLOWBABY_CAPTURE"


def capture_enabled() -> bool:
    return Environment.read().flag(CAPTURE_ENV)


def topic_id_for(source: str, session_id: str) -> str:
    return f"session-{source}-{hashlib.sha256(session_id.encode()).hexdigest()[:16]}"


def read_session(request: CaptureRequest, workspace: Path) -> tuple[SessionInfo, list[Message]] | None:
    """The session and all its turns, or None when it is not a session of this workspace."""
    root = str(workspace)
    sources: dict[str, tuple[type[ClaudeCodeSource | CodexSource | GeminiSource | OpenCodeSource], Path, int]] = {
        "claude-code": (ClaudeCodeSource, claude_folder(), 3),  # <config>/projects/<cwd>/<id>.jsonl
        "codex": (CodexSource, codex_folder(), 5),  # <CODEX_HOME>/sessions/YYYY/MM/DD/rollout-....jsonl
        "gemini": (GeminiSource, gemini_folder(), 4),  # <.gemini>/tmp/<project>/chats/session-....jsonl
    }
    kind, folder, depth = sources.get(request.source, (OpenCodeSource, opencode_folder(), 0))
    if request.transcriptPath and depth:  # the hook's transcript: the client's folder, whatever our environment
        transcript = Path(request.transcriptPath)
        if transcript.suffix != ".jsonl" or len(transcript.parents) < depth or not transcript.is_file():
            return None
        folder = transcript.parents[depth - 1]
    source: ClaudeCodeSource | OpenCodeSource | CodexSource | GeminiSource = kind(folder)
    try:
        found = [s for s in source.sessions(root) if s.session_id == request.sessionId]
        if not found or not within(found[0].directory, root):
            return None
        return found[0], source.read(found[0], None).messages
    except (SourceError, OSError):
        return None


class CaptureLog:
    """Per session: turns captured so far, and when."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save(self, key: str, record: dict[str, Any]) -> None:
        data = self.load()
        data[key] = record
        write_atomic(self.path, json.dumps(data, indent=1))


def plan_capture(
    request: CaptureRequest,
    session: SessionInfo,
    messages: list[Message],
    start: int,
    previous: Memory | None,
    known_decisions: set[str],
    workspace: Path,
    distiller: Callable[..., Distilled] | None = None,
    stored: Callable[[list[str], list[str]], list[Memory]] | None = None,
) -> tuple[dict[str, Any] | None, str, Distilled | None]:
    """(ingestForAgent params, "", summary) for turns[start:], or (None, why nothing is stored,
    summary). `distiller` takes distil()'s arguments (the LLM's, graph/capture/llm_distil.py);
    default: the offline distil(). `stored(topicIds, topics)` finds the memories the session's own
    storeMemory calls made: decisions they hold are not captured again."""
    new: Sequence[Message] = messages[start:]
    if not new:
        return None, "no new turns", None
    agent = request.agentName or request.source
    got = (distiller or distil)(new, workspace=str(workspace), title=session.title, agent=agent)
    old_decisions = list(previous.decisions) if previous else []
    old_refs = list(previous.references) if previous else []
    calls = own_stores(messages)
    own = stored(calls.topic_ids, calls.topics) if calls and stored is not None else []
    got.decisions = [d for d in got.decisions if not is_chatter(d)]  # the LLM's summary too
    fresh = [d for d in got.decisions if not _known(normal(d), known_decisions) and not covered(d, own)]
    fresh_refs = [r for r in got.references if r not in old_refs]
    fresh_edits = [r for r in got.edited if r not in old_refs]
    if not fresh and not fresh_edits and not got.next_steps and not got.open_questions:
        return None, "repeats existing memory" if got.decisions or got.references else "nothing to keep", got
    if previous and not fresh and not fresh_edits:
        steps = {normal(s) for s in [*previous.next_steps, *previous.open_questions]}
        if all(normal(s) in steps for s in [*got.next_steps, *got.open_questions]):
            return None, "repeats existing memory", got
    now = utc_now()
    turns = f"turns 1-{len(messages)}" if previous else f"turns {start + 1}-{len(messages)}"
    context = f"{got.context} ({agent} session {request.sessionId}, {turns}, captured at {request.reason})"
    params = {
        "topic": previous.topic if previous else got.topic,
        "context": context[:2000],
        "decisions": [*old_decisions, *fresh][-MAX_DECISIONS:],
        "rationale": _merge(previous.rationale if previous else [], got.rationale),
        "openQuestions": got.open_questions or (previous.open_questions if previous else []),
        "nextSteps": got.next_steps or (previous.next_steps if previous else []),
        "references": [*old_refs, *fresh_refs][:MAX_REFERENCES],
        "agentName": agent,
        "timeScope": turns,
        "metadata": {
            "topicId": topic_id_for(request.source, request.sessionId),
            "createdAt": previous.created_at if previous else now,
            "updatedAt": now,
            "sessionId": request.sessionId,
            "status": MemoryStatus.ACTIVE.value,
        },
    }
    return params, "", got


def _known(decision: str, known: set[str]) -> bool:
    """Said before: the same words, or words that hold (or are held by) a known decision's."""
    return decision in known or any(len(k) >= 20 and (k in decision or decision in k) for k in known)


def _merge(old: list[str], new: list[str]) -> list[str]:
    seen = {normal(item) for item in old}
    return [*old, *(item for item in new if normal(item) not in seen)][-MAX_DECISIONS:]


def stored_in(current: list[Memory]) -> Callable[[list[str], list[str]], list[Memory]]:
    """plan_capture's `stored`: the current memories with one of these topicIds or topics."""

    def find(topic_ids: list[str], topics: list[str]) -> list[Memory]:
        return [m for m in current if m.topic_id in topic_ids or m.topic in topics]

    return find
