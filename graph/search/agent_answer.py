"""What an MCP client's model reads (INGEST_CONTRACT.md 12.1, issue 48): a retrieval as a short index,
one line per memory (its topicId, title, status and date, and the line that answers), and one memory
whole when the agent asks for it (flowbaby_getMemory). Progressive disclosure: three memories cost a
few hundred tokens, not the full entries twice. Every field a memory or caller wrote goes through
`inline` (graph.search.briefing) first, as in the hooks' text: it cannot start a line or open a tag.
"""

from __future__ import annotations

from typing import Any

from graph.core.contract import Freshness
from graph.search.briefing import inline, stale_mark
from graph.search.token_budget import count_tokens, truncate_to_tokens

ANSWER_LINE_TOKENS = 100
"""The most one index line may take: three lines and the header stay under 400 tokens."""
OPEN_HINT = "flowbaby_getMemory(topicIds) gives any of them whole"


def index_line(entry: dict[str, Any], rank: int) -> str:
    """`1. Title: the decisions (or the context) [topicId x, Active, 2026-12-04]` and short marks:
    stale code references, an unmerged branch, a possible newer memory. The tail is never cut."""
    turn = entry.get("sessionTurn")
    if turn:
        tail = f" [session {turn.get('sessionId')} ({turn.get('source')}), turn {turn.get('turnId')}]"
        gist = str(entry.get("summaryText") or "")
    else:
        marks = ""
        if entry.get("freshness"):
            marks += stale_mark(Freshness.model_validate(entry["freshness"]))
        if entry.get("unmerged"):
            marks += f" (made on unmerged branch {entry.get('branch') or 'a detached HEAD'})"
        if entry.get("possiblySupersededBy"):
            marks += f" (possibly superseded by {entry['possiblySupersededBy']})"
        if entry.get("overriddenBy"):
            marks += f" (overridden in this project by {entry['overriddenBy']})"
        date = str(entry.get("updatedAt") or entry.get("createdAt") or "")[:10]
        user = ", user scope" if entry.get("scope") == "user" else ""
        tail = f"{marks} [topicId {entry.get('topicId')}, {entry.get('status')}, {date}{user}]"
        gist = "; ".join(entry.get("decisions") or []) or str(entry.get("context") or "")
    tail = inline(tail)
    head = inline(f"{rank}. {entry.get('topic')}: {gist}")
    return truncate_to_tokens(head, max(10, ANSWER_LINE_TOKENS - count_tokens(tail))) + " " + tail


def answer_index(reply: dict[str, Any]) -> str:
    """A retrieval reply as the index an agent reads: a header, one line per entry, or why nothing was found."""
    entries = reply.get("entries") or []
    if not entries:
        why = reply.get("abstainReason") or "no stored memory matches"
        return f"No Flowbaby memory answers this: {inline(str(why))}."
    lines = [f"Flowbaby memory, best first ({OPEN_HINT}):"]
    lines += [index_line(entry, rank) for rank, entry in enumerate(entries, 1)]
    return "\n".join(lines)


def memory_whole(got: dict[str, Any]) -> str:
    """One getMemory reply as markdown: the newest version with every field, then the older versions
    and the supersession links one line each. Fields keep their lines; only tag-like text is defused."""
    latest = got["latest"]
    lines = [f"# {inline(latest['topic'])}", ""]
    lines.append(
        f"topicId {got['topicId']}, {latest['status']}, version {latest['version']} of {len(got['versions'])}, "
        f"updated {latest['updatedAt'][:16]}"
        + (f", plan {latest['planId']}" if latest.get("planId") else "")
        + (", user scope (your own memory, every project)" if got.get("scope") == "user" else "")
    )
    lines += ["", inline(latest["context"])]
    for title, key in (
        ("Decisions", "decisions"),
        ("Rationale", "rationale"),
        ("Open questions", "openQuestions"),
        ("Next steps", "nextSteps"),
        ("References", "references"),
    ):
        if latest.get(key):
            lines += ["", f"{title}:", *(f"- {inline(item)}" for item in latest[key])]
    older = [v for v in got["versions"] if v["version"] != latest["version"]]
    if older:
        lines += ["", "Earlier versions:"]
        lines += [f"- v{v['version']} {v['status']} {v['updatedAt'][:10]}: {inline(v['topic'])}" for v in older]
    links = [(link["olderTopicId"], "supersedes") for link in got.get("supersedes") or [] if link["kind"] != "version"]
    links += [
        (link["newerTopicId"], "superseded by") for link in got.get("supersededBy") or [] if link["kind"] != "version"
    ]
    if links:
        lines += ["", *(f"{how} {topic} (implied)" for topic, how in links)]
    return "\n".join(lines)
