"""What the client hooks put in front of an agent without it asking (INGEST_CONTRACT.md, hooks).

The session-start briefing lists the workspace's current decisions, the open questions and
next steps of recent memories, and what other agents stored since this agent's last session,
one line per memory with its topicId, ranked by a documented score and cut at a hard token
budget. Per-prompt recall turns a retrieval's entries into the same compact lines. Both count
tokens with the retrieval budget's counter (cl100k_base).

What they print goes into the agent's context unasked (Claude Code wraps it in `<system-reminder>`;
the VS Code extension writes it to Copilot's instructions file), so every field a memory or a caller
wrote passes through `inline` first: it can neither start a line of its own nor open or close a tag.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graph.core.contract import Freshness, MemoryStatus
from graph.core.files import write_atomic
from graph.core.memories import Memory
from graph.search.one_subject import older_entries, older_ones
from graph.search.supersession import Pair
from graph.search.token_budget import count_tokens, truncate_to_tokens

BRIEFING_TOKENS = 800
RECALL_TOKENS = 400
LINE_TOKENS = 70
"""No single line may take more than this, so one long memory cannot fill the budget alone."""
RECENCY_HALF_LIFE_DAYS = 14.0
STATUS_WEIGHT = {MemoryStatus.DECISION_RECORD: 1.0, MemoryStatus.ACTIVE: 0.6}
RECENT_DAYS = 30
"""Open questions and next steps are listed for memories updated within this many days."""
GET_MEMORY_HINT = "open any of them whole with flowbaby_getMemory(topicIds)"
STALE_WINDOW = 40
"""The decisions (best ranked first) whose code references are checked for staleness: more than the
budget ever shows, so the check costs a bounded number of path look-ups."""
STALE_STATES = ("changed", "moved", "missing")


_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\s]+")
"""Control characters (newlines, CR, tab, NUL, C1), U+2028/U+2029, zero-width and bidi marks, any space."""
_CLOSED_TAG = re.compile(r"<(\s*[/?!]?\s*[A-Za-z!][^<>]{0,200})>")
_TAG_START = re.compile(r"<(?=\s*[/?!]?\s*[A-Za-z!])")


def inline(text: str) -> str:
    """One line of plain text: every run of control characters, line or paragraph separators and
    spaces becomes one space, and tag-like text (`<system-reminder>`, `</x`, `<!--`) gets ‹ › for
    its angle brackets; `a < b` and `->` stay."""
    flat = _BREAKS.sub(" ", text).strip()
    return _TAG_START.sub("‹", _CLOSED_TAG.sub(r"‹\1›", flat))


def score(memory: Memory, now: datetime, recalls: int) -> float:
    """status + recency + retrieval count: a DecisionRecord weighs 1.0 and an Active memory 0.6;
    recency is 0.5 ** (age in days / 14) of the memory's updatedAt; each tenfold of the times
    the hooks recalled it adds 0.25 (0.25 * log10(1 + recalls))."""
    age_days = max(0.0, (now - _when(memory.updated_at)).total_seconds() / 86400)
    recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
    return float(STATUS_WEIGHT.get(memory.status, 0.0) + recency + 0.25 * math.log10(1 + max(0, recalls)))


def current_memories(memories: Iterable[Memory]) -> list[Memory]:
    """The newest version of every topic, unless that topic is superseded (or an agent's proposal)."""
    newest: dict[str, Memory] = {}
    for memory in memories:
        kept = newest.get(memory.topic_id)
        if kept is None or memory.version > kept.version:
            newest[memory.topic_id] = memory
    return [m for m in newest.values() if m.status not in (MemoryStatus.SUPERSEDED, MemoryStatus.PROPOSED)]


def build_briefing(
    memories: Iterable[Memory],
    *,
    agent_name: str | None,
    since: str | None,
    recalls: dict[str, int],
    max_tokens: int = BRIEFING_TOKENS,
    now: datetime | None = None,
    freshness: Callable[[list[Memory]], list[Freshness] | None] | None = None,
    pairs: Iterable[Pair] = (),
) -> dict[str, Any]:
    """The briefing text (empty when there is nothing to say) and what it holds. `freshness`
    (graph.code.freshness, for the given memories in order; None when it took too long) marks
    decisions whose code changed. `pairs` (the supersession suggestions): of two current memories
    on one subject only the newer is listed (graph/search/one_subject.py)."""
    now = now or datetime.now(UTC)
    current = current_memories(memories)
    hidden = older_ones(current, pairs)
    current = [m for m in current if m.topic_id not in hidden]
    ranked = sorted(current, key=lambda m: (-score(m, now, recalls.get(m.topic_id, 0)), m.topic_id))
    checked = [m for m in ranked if m.decisions and m.references][:STALE_WINDOW] if freshness else []
    found = freshness(checked) if checked and freshness else None
    stale = {m.topic_id: mark for m, f in zip(checked, found or [], strict=False) if (mark := stale_mark(f))}
    cutoff = _when(since) if since else None
    others = [
        m
        for m in ranked
        if cutoff is not None and m.agent_name != agent_name and _when(m.staged_at or m.created_at) > cutoff
    ]
    fresh = {m.topic_id: m.agent_name or "another agent" for m in others}
    recent = [m for m in ranked if (now - _when(m.updated_at)).days <= RECENT_DAYS]
    sections: list[tuple[str, str, list[tuple[Memory, str]]]] = [
        ("decisions", "Current decisions:", [(m, _decision_line(m)) for m in ranked if m.decisions]),
        ("open", "Open questions and next steps:", [(m, _open_line(m)) for m in recent if _open_line(m)]),
        ("others", "Stored by other agents since your last session:", [(m, _other_line(m)) for m in others]),
    ]
    header = f"Flowbaby workspace memory (one line per memory; {GET_MEMORY_HINT}):"
    used = count_tokens(header)
    lines: list[str] = []
    items: list[dict[str, Any]] = []
    for kind, title, candidates in sections:
        title_cost = count_tokens(title) + 1
        wrote_title = False
        for memory, text in candidates:
            shown = any(item["topicId"] == memory.topic_id for item in items)
            if kind == "others" and shown:
                continue  # already listed above, marked as new
            tag = f" (new, by {fresh[memory.topic_id]})" if kind != "others" and memory.topic_id in fresh else ""
            mark = stale.get(memory.topic_id, "") if kind == "decisions" else ""
            suffix = " " + inline(f"{mark}{tag} [topicId {memory.topic_id}]")  # never cut: the mark and the id stay
            line = truncate_to_tokens(f"- {inline(text)}", max(10, LINE_TOKENS - count_tokens(suffix))) + suffix
            cost = count_tokens(line) + 1
            extra = 0 if wrote_title else title_cost
            if used + cost + extra > max_tokens:
                continue  # a shorter line further down may still fit
            if not wrote_title:
                lines.append(title)
                wrote_title = True
            lines.append(line)
            used += cost + extra
            item = {
                "section": kind,
                "topicId": memory.topic_id,
                "score": round(score(memory, now, recalls.get(memory.topic_id, 0)), 4),
            }
            if kind == "decisions" and memory.topic_id in stale:
                item["stale"] = True
            items.append(item)
    if not items:
        return {"text": "", "items": [], "tokens": 0, "memories": len(current)}
    text = "\n".join([header, *lines])
    return {"text": text, "items": items, "tokens": count_tokens(text), "memories": len(current)}


def compact_recall(
    entries: list[dict[str, Any]], exclude: set[str], max_tokens: int = RECALL_TOKENS, limit: int = 3
) -> dict[str, Any]:
    """Retrieval entries as compact lines, at most `limit`, none already injected, within the budget;
    of two entries on one subject only the newer (graph/search/one_subject.py)."""
    header = f"Flowbaby recalled for this prompt ({GET_MEMORY_HINT}):"
    exclude = exclude | older_entries(entries)
    used = count_tokens(header)
    lines: list[str] = []
    topics: list[str] = []
    items: list[dict[str, str]] = []
    for entry in entries:
        topic_id = str(entry.get("topicId") or "")
        if not topic_id or topic_id in exclude or topic_id in topics or len(topics) >= limit:
            continue
        gist = "; ".join(entry.get("decisions") or []) or str(entry.get("context") or "")
        date = str(entry.get("updatedAt") or "")[:10]
        user = entry.get("scope") == "user"
        winner = (
            f" (overridden in this project by topicId {entry['overriddenBy']})" if entry.get("overriddenBy") else ""
        )
        line = truncate_to_tokens(
            inline(
                f"- {entry.get('topic')}: {gist}{winner} [topicId {topic_id}, {date}{', user scope' if user else ''}]"
            ),
            LINE_TOKENS * 2,
        )
        cost = count_tokens(line) + 1
        if used + cost > max_tokens:
            continue
        lines.append(line)
        topics.append(topic_id)
        items.append({"topicId": topic_id, "scope": "user" if user else "project"})
        used += cost
    if not lines:
        return {"text": "", "topicIds": [], "items": [], "tokens": 0}
    text = "\n".join([header, *lines])
    return {"text": text, "topicIds": topics, "items": items, "tokens": count_tokens(text)}


def stale_mark(freshness: Freshness) -> str:
    """` (stale: a.py changed, b.py missing)` for the references that changed, moved or went
    missing since the memory's updatedAt (at most two named); "" when none did."""
    gone = [r for r in freshness.references if r.state in STALE_STATES]
    if not gone:
        return ""
    named = [f"{r.reference.strip()} {r.state}" + (f" to {r.movedTo}" if r.movedTo else "") for r in gone[:2]]
    more = f", +{len(gone) - 2} more" if len(gone) > 2 else ""
    return f" (stale: {', '.join(named)}{more})"


def _decision_line(memory: Memory) -> str:
    return f"{memory.topic}: {'; '.join(memory.decisions)}"


def _open_line(memory: Memory) -> str:
    parts = []
    if memory.open_questions:
        parts.append("open: " + "; ".join(memory.open_questions))
    if memory.next_steps:
        parts.append("next: " + "; ".join(memory.next_steps))
    return f"{memory.topic}: {' | '.join(parts)}" if parts else ""


def _other_line(memory: Memory) -> str:
    return f"{memory.topic} (by {memory.agent_name or 'another agent'}, {memory.updated_at[:16]})"


def _when(stamp: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class RecallCounts:
    """How often the hooks recalled each topic (`.flowbaby/recall_counts.json`), for the score."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}

    def add(self, topic_ids: list[str]) -> None:
        if not topic_ids:
            return
        with self._lock:
            counts = self.load()
            for topic_id in topic_ids:
                counts[topic_id] = counts.get(topic_id, 0) + 1
            write_atomic(self.path, json.dumps(counts))
