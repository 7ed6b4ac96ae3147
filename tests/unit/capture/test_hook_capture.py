"""Capture through the service (a never-opened FlowbabyService on a real store, over a real
Claude Code-shaped transcript), and the hook's calls over the owner endpoint's real unix socket."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbaby import hook
from flowbaby.owner_line import call_json
from graph.core.contract import BriefingRequest, BriefingResponse, RecallRequest, RecallResponse
from graph.core.methods import OWNER_METHODS
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, WorkspacePaths
from graph.engine.service import FlowbabyService
from graph.owner.endpoint import OwnerEndpoint

SECRET = "ghp_" + "Z9" * 18


@pytest.fixture
def service(paths: WorkspacePaths, tmp_path: Path) -> Iterator[FlowbabyService]:
    """Never opened: no worker, no model; capture only reads the transcript and stages."""
    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None)
    yield service
    service.store.close()


class Transcript:
    """A Claude Code transcript: <config>/projects/<cwd>/<session>.jsonl, user and assistant records."""

    def __init__(self, config: Path, cwd: Path, session: str = "sess-1") -> None:
        folder = config / "projects" / "".join(c if c.isalnum() else "-" for c in str(cwd))
        folder.mkdir(parents=True)
        self.path, self.cwd, self.session, self.count = folder / f"{session}.jsonl", cwd, session, 0

    def add(self, role: str, text: str = "", edit: str = "") -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        if edit:
            content.append({"type": "tool_use", "id": f"t{self.count}", "name": "Write", "input": {"file_path": edit}})
        message: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            message["id"] = f"msg{self.count}"
        record: dict[str, Any] = {
            "type": role,
            "uuid": f"u{self.count}",
            "cwd": str(self.cwd),
            "sessionId": self.session,
        }
        record |= {"timestamp": f"2026-12-01T10:00:{self.count:02d}Z", "message": message}
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")
        self.count += 1

    def params(self) -> dict[str, Any]:
        return {"source": "claude-code", "sessionId": self.session, "transcriptPath": str(self.path), "reason": "Stop"}


def test_capture_versions_dedup_privacy_and_switch(
    service: FlowbabyService, paths: WorkspacePaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    talk = Transcript(tmp_path / "claude", paths.root)
    talk.add("user", f"Let's keep invoices in S3 with a 10 year lifecycle. <private>pin 4411</private> Key {SECRET}.")
    talk.add("assistant", "Writing the lifecycle rule.", edit=str(paths.root / "infra" / "s3.tf"))
    first = asyncio.run(call_json(service, "capture", talk.params()))
    assert first["captured"] and first["version"] == 1 and first["topicId"].startswith("session-claude-code-")
    stored = service.store.topic_versions(first["topicId"])[-1]
    assert stored.decisions == ["Let's keep invoices in S3 with a 10 year lifecycle."]
    assert stored.references == ["infra/s3.tf"] and stored.session_id == "sess-1"
    assert stored.agent_name == "claude-code" and "turns 1-2" in stored.context
    text = json.dumps(stored.sections())
    assert "4411" not in text and SECRET not in text

    assert asyncio.run(call_json(service, "capture", talk.params()))["reason"] == "no new turns"
    talk.add("user", "Remember: let's keep invoices in S3 with a 10 year lifecycle.")
    talk.add("assistant", "Yes, that is what we did.")
    repeated = asyncio.run(call_json(service, "capture", talk.params()))
    assert not repeated["captured"] and repeated["reason"] == "repeats existing memory"

    talk.add("user", "We decided to encrypt the bucket with a customer managed KMS key.")
    later = asyncio.run(call_json(service, "capture", talk.params()))
    assert later["captured"] and later["version"] == 2 and later["topicId"] == first["topicId"]
    newest = service.store.topic_versions(first["topicId"])[-1]
    assert len(newest.decisions) == 2 and newest.references == ["infra/s3.tf"]

    monkeypatch.setenv("FLOWBABY_CAPTURE", "0")
    talk.add("user", "We will tag every bucket with the cost centre.")
    assert "off" in asyncio.run(call_json(service, "capture", talk.params()))["reason"]


def test_a_session_outside_the_workspace_is_never_captured(service: FlowbabyService, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    talk = Transcript(tmp_path / "claude", elsewhere)
    talk.add("user", "We decided to use Rust for the parser.")
    reply = asyncio.run(call_json(service, "capture", talk.params()))
    assert not reply["captured"] and reply["reason"] == "not a session of this workspace"


class FakeOwner:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def add_operation_listener(self, listener: Any) -> None:
        pass

    async def briefing(self, request: BriefingRequest) -> BriefingResponse:
        self.calls.append(("briefing", request.model_dump(exclude_unset=True)))
        text = "Flowbaby workspace memory: - use Postgres [topicId t1]"
        return BriefingResponse(text=text, items=[{"topicId": "t1"}], tokens=9, memories=1)

    async def recall(self, request: RecallRequest) -> RecallResponse:
        self.calls.append(("recall", request.model_dump(exclude_unset=True)))
        text = "Flowbaby recalled: - staging rotates Fridays [topicId t2]"
        return RecallResponse(text=text, topicIds=["t2"], tokens=9, abstained=False, abstainReason=None)


def test_hooks_talk_to_the_owner_over_its_socket(
    paths: WorkspacePaths, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert {"briefing", "recall", "capture"} <= OWNER_METHODS
    owner = FakeOwner()

    def run_hook(event: str, payload: dict[str, Any]) -> str:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
        assert hook.main([event, "--workspace", str(paths.root), "--client", "claude-code"]) == 0
        return capsys.readouterr().out

    async def scenario() -> list[str]:
        endpoint = OwnerEndpoint(owner, paths)
        await endpoint.start()
        try:
            start = await asyncio.to_thread(run_hook, "SessionStart", {"session_id": "s1", "source": "startup"})
            prompt = await asyncio.to_thread(run_hook, "UserPromptSubmit", {"session_id": "s1", "prompt": "staging?"})
            again = await asyncio.to_thread(run_hook, "UserPromptSubmit", {"session_id": "s1", "prompt": "db?"})
            return [start, prompt, again]
        finally:
            await endpoint.close()

    start, prompt, again = asyncio.run(scenario())
    assert "use Postgres" in start and "staging rotates" in prompt and again
    assert owner.calls[0] == ("briefing", {"agentName": "claude-code", "maxTokens": 800})
    assert owner.calls[1][1]["exclude"] == ["t1"]
    assert owner.calls[2][1]["exclude"] == ["t1", "t2"]  # never the same memory twice in a session
