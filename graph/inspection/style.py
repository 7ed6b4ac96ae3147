"""How a node looks, shared by the PNG and the HTML page: its category, colour and label."""

from __future__ import annotations

from typing import Any

TYPE_COLOURS = {
    "memory": "#4c72b0",
    "plan": "#8c8c8c",
    "technology": "#dd8452",
    "component": "#55a868",
    "file": "#c44e52",
    "issue": "#8172b3",
    "identifier": "#937860",
    "person": "#da8bc3",
    "decision": "#ccb974",
    "concept": "#64b5cd",
    "organization": "#a1c9f4",
    "place": "#8de5a1",
    "date": "#d0bbff",
    "topic": "#ff9f9b",
    "session": "#b0b0b0",
}
"""One colour per node kind or entity type, shared by the PNG and the HTML view."""
OTHER_COLOUR = "#bbbbbb"


def node_category(data: dict[str, Any]) -> str:
    """What a node is for colouring: memory, plan, or the entity's type."""
    kind = data.get("kind", "")
    if kind == "entity":
        return str(data.get("entity_type") or "entity").lower()
    return str(kind)


def node_colour(data: dict[str, Any]) -> str:
    return TYPE_COLOURS.get(node_category(data), OTHER_COLOUR)


def node_label(data: dict[str, Any], node: str, width: int) -> str:
    """A node's name cut to `width` characters; a memory also shows its version."""
    name = str(data.get("name") or node)
    name = name if len(name) <= width else name[: width - 1] + "…"
    return f"{name} v{data.get('version', '?')}" if data.get("kind") == "memory" else name
