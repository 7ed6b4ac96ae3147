"""Capture without chatter (issue 50, item 4): requests to store, acknowledgements and talk about
flowbaby are no decisions, and a session that stored its decision itself (its transcript's
`flowbaby_storeMemory` call) is not captured as a second memory of it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from flowbaby.owner_line import call_json
from graph.core.workspace import WorkspacePaths
from graph.engine.service import FlowbabyService
from tests.bench.chatter import run as measure
from tests.unit.capture.test_hook_capture import Transcript, service  # noqa: F401 (fixture: never opened, capture only stages)


def test_the_labelled_chatter_set_keeps_decisions_and_drops_chatter() -> None:
    found = measure()
    assert found["chatterKeptAsDecisions"] == 0, found["misses"]
    assert found["storedDecisionsRepeated"] == 0, found["misses"]
    assert found["decisionsKept"] == found["decisions"], found["misses"]


def test_a_session_that_stored_its_decision_is_not_captured_again(
    service: FlowbabyService,  # noqa: F811 (the fixture of test_hook_capture)
    paths: WorkspacePaths,
    tmp_path: Path,
) -> None:
    summary = {
        "topic": "Help text width",
        "context": "How wide the CLI's help output is.",
        "decisions": ["Cap the help output at 100 columns instead of 80"],
        "agentName": "claude-code",
    }
    reply = asyncio.run(call_json(service, "store_memory", summary))
    talk = Transcript(tmp_path / "claude", paths.root)
    talk.add(
        "user", "We decided to wrap the help output at 100 columns rather than 80. Store what we decided in flowbaby."
    )
    with talk.path.open("a") as out:  # the agent's own store call and its reply, as Claude Code writes them
        tool = {"type": "tool_use", "id": "toolu_1", "name": "mcp__flowbaby__flowbaby_storeMemory", "input": summary}
        result = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": json.dumps(reply)}],
        }
        for role, block in (("assistant", tool), ("user", result)):
            record = {"type": role, "uuid": f"x{role}", "cwd": str(paths.root), "sessionId": talk.session}
            message = {"role": role, "content": [block], **({"id": "msgx"} if role == "assistant" else {})}
            talk.count += 1
            out.write(
                json.dumps(record | {"timestamp": f"2026-12-01T10:00:{talk.count:02d}Z", "message": message}) + "\n"
            )
    talk.add("assistant", "Stored the decision in flowbaby.")
    captured = asyncio.run(call_json(service, "capture", talk.params()))
    assert not captured["captured"], captured
    topics = {m.topic_id for m in service.store.iter_memories()}
    assert topics == {reply["summary_id"]}, "one memory of the decision: the one the agent stored"

    talk.add("user", "Also, let's keep the usage line on its own row. I'll save this to memory.")
    later = asyncio.run(call_json(service, "capture", talk.params()))
    assert later["captured"], later
    stored = service.store.topic_versions(later["topicId"])[-1]
    assert stored.decisions == ["Also, let's keep the usage line on its own row."]
