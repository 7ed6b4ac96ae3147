"""A retrieval's answer as the markdown an agent quotes (retrieveForAgent's `markdown`)."""

from __future__ import annotations

from graph.code.freshness import describe
from graph.core.contract import RetrievalEntry


def render_markdown(entries: list[RetrievalEntry], abstained: str | None = None) -> str:
    """The narrative an agent quotes: one section per memory or session turn. An abstained answer
    says nothing was found (its weak candidates are in the JSON only)."""
    lines = [f"# Retrieved Memories ({len(entries)} results)"]
    if abstained and not entries:
        lines += ["", f"Nothing relevant was found: {abstained}."]
    for rank, entry in enumerate(entries, 1):
        turn = entry.sessionTurn
        if turn is not None:
            lines += ["", f"## {rank}. {entry.topic}", "", entry.summaryText]
            lines += [
                "",
                f"**Metadata:** session `{turn.sessionId}` ({turn.source}), turn `{turn.turnId}`, "
                f"created {entry.createdAt}",
                "",
                f"**Relevance score:** {entry.score:.3f} ({', '.join(entry.lanes)})",
            ]
            continue
        lines += ["", f"## {rank}. {entry.topic}", ""]
        lines.append(f"**Context:** {entry.context}")
        if entry.decisions:
            lines += ["", "**Decisions:**"] + [f"- {d}" for d in entry.decisions]
        meta = [
            f"topicId `{entry.topicId}`",
            f"status {entry.status.value}",
            f"created {entry.createdAt}",
            f"version {entry.version}",
        ]
        if entry.planId:
            meta.insert(1, f"plan `{entry.planId}`")
        if entry.scope == "user":
            meta.insert(1, "user scope (your own memory, every project)")
        if entry.overriddenBy:
            lines += ["", f"**Overridden in this project by:** `{entry.overriddenBy}`"]
        if entry.via:
            lines += ["", f"**Via:** {entry.via}"]
        if entry.possiblySupersededBy:
            lines += ["", f"**Possibly superseded by:** `{entry.possiblySupersededBy}` (unconfirmed)"]
        references = describe(entry.freshness)
        if references:
            lines += ["", references]
        if entry.unmerged:
            made = f"`{entry.branch}`" if entry.branch else "a detached HEAD"
            lines += [
                "",
                f"**Branch:** made on {made} at {(entry.commit or '')[:7]}, not merged into the current branch",
            ]
        lines += [
            "",
            f"**Metadata:** {', '.join(meta)}",
            "",
            f"**Relevance score:** {entry.score:.3f} ({', '.join(entry.lanes)})",
        ]
    return "\n".join(lines) + "\n"
