"""The briefing's stale marks, from given freshness results (the git checks are in
tests/integration/test_briefing_freshness.py): what is named, and that a long line keeps its
mark and its topicId."""

from __future__ import annotations

from dataclasses import replace

from graph.core.contract import Freshness, ReferenceFreshness
from graph.core.memories import Memory
from graph.search.briefing import LINE_TOKENS, build_briefing
from graph.search.token_budget import count_tokens
from tests.unit.cli.test_hooks import _memory


def _ref(path: str, state: str, moved: str | None = None) -> ReferenceFreshness:
    return ReferenceFreshness.model_validate(
        {"reference": path, "kind": "file", "path": path, "state": state, "movedTo": moved}
    )


def test_stale_decisions_are_marked_and_long_lines_keep_the_mark_and_the_id() -> None:
    long = replace(_memory("long", decisions=["word " * 200]), references=["a.py", "b.py", "c.py", "d.py"])
    moved = replace(_memory("moved"), references=["old.py"])
    fine = replace(_memory("fine"), references=["ok.py"])
    bare = _memory("bare")  # no references: never checked
    results = {
        "long": [
            _ref("a.py", "changed"),
            _ref("b.py", "missing"),
            _ref("c.py", "moved", "z.py"),
            _ref("d.py", "changed"),
        ],
        "moved": [_ref("old.py", "moved", "new.py")],
        "fine": [_ref("ok.py", "current")],
    }
    asked: list[str] = []

    def freshness(memories: list[Memory]) -> list[Freshness]:
        asked.extend(m.topic_id for m in memories)
        return [Freshness(state="changed", basis="git", references=results[m.topic_id]) for m in memories]

    brief = build_briefing([long, moved, fine, bare], agent_name=None, since=None, recalls={}, freshness=freshness)
    assert sorted(asked) == ["fine", "long", "moved"]
    lines = {line.split(":")[0].removeprefix("- "): line for line in brief["text"].splitlines()}
    assert lines["long"].endswith(" …[truncated] (stale: a.py changed, b.py missing, +2 more) [topicId long]")
    assert count_tokens(lines["long"]) <= LINE_TOKENS
    assert lines["moved"].endswith("(stale: old.py moved to new.py) [topicId moved]")
    assert "stale" not in lines["fine"] and "stale" not in lines["bare"]
    assert {i["topicId"] for i in brief["items"] if i.get("stale")} == {"long", "moved"}

    unmarked = build_briefing([long, moved], agent_name=None, since=None, recalls={}, freshness=lambda m: None)
    assert "stale" not in unmarked["text"] and "[topicId long]" in unmarked["text"]  # a check too slow: no marks
