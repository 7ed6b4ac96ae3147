"""The preference capture's rule (graph/capture/preference.py) on tests/bench/preference_set.py: precision
and recall of `preference` against the rest (project decisions and chatter), on the set the rules were
written against and on the held-out set. `python -m tests.bench.preference` prints them as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graph.capture.preference import is_preference
from tests.bench.preference_set import HELD_OUT, PREFERENCE, SENTENCES


def score(labelled: list[tuple[str, str]]) -> dict[str, Any]:
    """Precision and recall of is_preference on `labelled`, with every miss named."""
    said = [(text, label, is_preference(text)) for text, label in labelled]
    hits = sum(1 for _, label, got in said if got and label == PREFERENCE)
    chosen = sum(1 for _, _, got in said if got)
    wanted = sum(1 for _, label, _ in said if label == PREFERENCE)
    return {
        "sentences": len(said),
        "preferences": wanted,
        "precision": round(hits / chosen, 3) if chosen else 1.0,
        "recall": round(hits / wanted, 3) if wanted else 1.0,
        "falsePositives": [(text, label) for text, label, got in said if got and label != PREFERENCE],
        "missed": [text for text, label, got in said if not got and label == PREFERENCE],
    }


def run(root: Path | None = None) -> dict[str, Any]:
    """Both sets (`root`, the bench's folder, is not needed: nothing is written)."""
    return {"tuned": score(SENTENCES), "heldOut": score(HELD_OUT), "all": score(SENTENCES + HELD_OUT)}


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
