"""How a stored memory reads as text: for cognee's document, and for the vector chunks.

The rendering keeps the summary's structure in plain headings so that the offline
extractor (which only sees the text cognee hands to its "LLM") can read the topic,
plan, session and decisions back out of it.
"""

from __future__ import annotations

from graph.core.memories import Memory

SECTION_TITLES = {
    "context": "Context",
    "decisions": "Decisions",
    "rationale": "Rationale",
    "openQuestions": "Open Questions",
    "nextSteps": "Next Steps",
    "references": "References",
}


def render_document(memory: Memory) -> str:
    lines = [f"# Topic: {memory.topic}", f"Topic ID: {memory.topic_id}", f"Version: {memory.version}"]
    lines.append(f"Status: {memory.status.value}")
    if memory.plan_id:
        lines.append(f"Plan: {memory.plan_id}")
    if memory.session_id:
        lines.append(f"Session: {memory.session_id}")
    if memory.agent_name:
        lines.append(f"Agent: {memory.agent_name}")
    if memory.time_scope:
        lines.append(f"Time scope: {memory.time_scope}")
    lines.append(f"Created: {memory.created_at}")
    for name, items in memory.sections()[1:]:
        if not items:
            continue
        lines.append("")
        lines.append(f"## {SECTION_TITLES[name]}")
        if name == "context":
            lines.append(items[0])
        else:
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines) + "\n"
