"""The check both memory-browser tests make of the graph's labels, as the page reports their boxes."""

from __future__ import annotations

from typing import Any


def no_overlap(boxes: list[dict[str, Any]]) -> None:
    """Every label has text and width, and no two of the boxes (screen pixels) overlap."""
    for i, a in enumerate(boxes):
        assert a["w"] > 0 and a["text"], a
        for b in boxes[i + 1 :]:
            side = a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
            assert side or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"], (a, b)
