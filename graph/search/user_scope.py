"""Reading the user scope beside a project's (issue 49): one ranked list from two stores, which user
memories this project overrides, and the briefing's "Your preferences" section.

Both stores rank with the same retrieval, but each scores against its own corpus (BM25's statistics,
the abstention's evidence), so their scores are not one scale: the two lists are fused by reciprocal
rank, each store's best first. A user memory on the subject of a live project memory is overridden in
that project: reconcile on write's judgement (graph.search.reconcile) says "same subject" in either
direction (the project memory read as replacing the user's, or the user's as repeating the project's).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from graph.core.contract import MemoryStatus
from graph.core.memories import Memory
from graph.search.briefing import LINE_TOKENS, inline
from graph.search.reconcile import decide, live_neighbours, measure, subject_text
from graph.search.reconciler import CachedEncoder
from graph.search.retrieval import ChunkIndex, Retriever
from graph.search.token_budget import count_tokens, truncate_to_tokens

RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al.): rank r scores 1 / (RRF_K + r)."""
PREFERENCES_TITLE = "Your preferences (your user memory, every project):"
PREFERENCES_SHARE = 4
"""The preferences take at most 1/PREFERENCES_SHARE of the briefing's budget (and at least MIN_TOKENS)."""
MIN_TOKENS = 60


def fuse(
    project: list[dict[str, Any]], user: list[dict[str, Any]], limit: int, max_tokens: int
) -> list[dict[str, Any]]:
    """Both stores' entries in one list by reciprocal rank (a tie: the project's first), at most `limit`,
    within `max_tokens`; a user entry a project memory overrides goes after every other entry."""
    ranked = [(1 / (RRF_K + i), 0, e) for i, e in enumerate(project)] + [
        (1 / (RRF_K + i), 1, e) for i, e in enumerate(user)
    ]
    ranked.sort(key=lambda item: (bool(item[2].get("overriddenBy")), -item[0], item[1]))
    out: list[dict[str, Any]] = []
    used = 0
    for _, _, entry in ranked:
        cost = int(entry.get("tokens") or 0)
        if len(out) >= limit or used + cost > max_tokens:
            continue
        out.append(entry)
        used += cost
    return out


def as_memory(fields: Mapping[str, Any]) -> Memory:
    """A user memory (a retrieval entry or getMemory's latest version) as reconcile reads one. Its topicId
    is prefixed, so that a project topic of the same name is a neighbour, not the memory itself."""
    stamp = str(fields.get("updatedAt") or "")
    return Memory(
        memory_id=str(fields.get("memoryId") or ""),
        topic_id="user:" + str(fields.get("topicId") or ""),
        version=int(fields.get("version") or 1),
        status=MemoryStatus.ACTIVE,
        topic=str(fields.get("topic") or ""),
        context=str(fields.get("context") or ""),
        decisions=[str(d) for d in fields.get("decisions") or []],
        rationale=[],
        open_questions=[],
        next_steps=[],
        references=[],
        time_scope=None,
        agent_name=None,
        session_id=None,
        plan_id=None,
        created_at=str(fields.get("createdAt") or stamp),
        updated_at=stamp,
    )


def overriding(
    user: Sequence[Mapping[str, Any]], retriever: Retriever, index: ChunkIndex, encoder: CachedEncoder
) -> dict[str, str]:
    """user topicId -> the topicId of the live project memory that wins over it in this project."""
    catalog = retriever.catalog
    encode = functools.partial(encoder.encode, encode=retriever.embedder.encode)
    out: dict[str, str] = {}
    for fields in user:
        mine = as_memory(fields)
        vector = encode([subject_text(mine)])[0]
        neighbours = live_neighbours(mine, vector, index.search, catalog.lexical.search, catalog.by_id)
        if not neighbours:
            continue
        forward = decide(mine, measure(mine, neighbours, encode))
        if forward.action != "add" and forward.target is not None:
            out[str(fields["topicId"])] = forward.target.memory.topic_id
            continue
        for project in neighbours:  # the project memory read as the newer one: "pip instead of uv" retires uv
            if decide(project, measure(project, [mine], encode)).action != "add":
                out[str(fields["topicId"])] = project.topic_id
                break
    return out


def budget(max_tokens: int) -> int:
    """What the preferences section may take of a briefing of `max_tokens`."""
    return min(max_tokens // 2, max(MIN_TOKENS, max_tokens // PREFERENCES_SHARE))


WHO = {"person": "you", "agent": "agent {agent}", "capture": "captured from {agent}", "import": "an import"}
"""How a preference's line names who wrote it (graph.core.contract.Writer)."""


def proposals_line(count: int) -> str:
    """The briefing's one line about agents' proposals waiting in the user store (never their text)."""
    return (
        f"- {count} agent proposal(s) wait for you, not shown as yours: flowbaby memories list --scope user "
        "--status Proposed; flowbaby memories accept|dismiss <topicId>"
    )


def stored_by(fields: Mapping[str, Any]) -> str:
    """Who stored a user memory, from which project and when (its stagedAt, which no writer sets): what a
    briefing line says of every preference, so that no agent's text reads as the person's own."""
    agent = str(fields.get("agentName") or "unknown client")
    written = fields.get("writtenBy")
    who = WHO[written].format(agent=agent) if written in WHO else f"{agent} (writer not recorded)"
    where = PurePath(str(fields.get("writtenIn") or "")).name
    when = str(fields.get("stagedAt") or "")[:10]
    return f"stored by {who}" + (f" in {where}" if where else "") + (f" on {when}" if when else "")


def preferences_section(
    preferences: Sequence[Mapping[str, Any]], overridden: Mapping[str, str], max_tokens: int
) -> tuple[list[str], list[dict[str, Any]], int]:
    """The section's lines (title first; none when nothing fits), its items and its tokens. A preference a
    project memory overrides says so and names it: the project's memory is listed among its decisions."""
    title_cost = count_tokens(PREFERENCES_TITLE) + 1
    lines: list[str] = []
    items: list[dict[str, Any]] = []
    used = title_cost
    for fields in preferences:
        topic_id = str(fields.get("topicId") or "")
        gist = "; ".join(fields.get("decisions") or []) or str(fields.get("context") or "")
        winner = overridden.get(topic_id)
        note = f" (overridden in this project by topicId {winner})" if winner else ""
        suffix = " " + inline(f"{note} [topicId {topic_id}, user scope; {stored_by(fields)}]")
        line = truncate_to_tokens(f"- {inline(str(fields.get('topic') or ''))}: {inline(gist)}", LINE_TOKENS) + suffix
        cost = count_tokens(line) + 1
        if used + cost > max_tokens:
            continue
        lines.append(line)
        used += cost
        item: dict[str, Any] = {"section": "preferences", "topicId": topic_id, "scope": "user"}
        if winner:
            item["overriddenBy"] = winner
        items.append(item)
    if not lines:
        return [], [], 0
    return [PREFERENCES_TITLE, *lines], items, used
