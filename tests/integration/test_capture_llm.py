"""Capture with an LLM configured: the documented prompt goes through litellm to the loopback
OpenAI fake (tests/support/fake_openai.py), its JSON is validated with the contract's summary
model, and every failure (HTTP error, non-JSON, an invalid summary) falls back to the offline
distillation. Private text and secrets never reach the LLM."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbaby.owner_line import call_json

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from graph.capture.llm_distil import PROMPT  # noqa: E402
from graph.core.settings import LLMSettings, Settings  # noqa: E402
from graph.core.workspace import WorkspaceLock, WorkspacePaths  # noqa: E402
from graph.engine.service import FlowbabyService  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.unit.capture.test_hook_capture import Transcript  # noqa: E402

SECRET = "ghp_" + "Q7" * 18
PRIVATE = "the vault pin is 90417"
LLM_DECISION = "Invoices move to S3 Glacier after 90 days."
"""No offline decision cue in it: only the LLM's summary holds it."""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def service(paths: WorkspacePaths, tmp_path: Path, fake: FakeOpenAI) -> Iterator[FlowbabyService]:
    llm = LLMSettings(provider="openai", model="gpt-4o-mini", api_key="sk-test", endpoint=fake.url)
    settings = Settings(llm=llm, embedding_model=str(tmp_path), llm_timeout_sec=20.0)
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None)
    yield service
    service.store.close()


def session(tmp_path: Path, paths: WorkspacePaths, name: str) -> Transcript:
    talk = Transcript(tmp_path / name, paths.root, session=name)
    talk.add("user", f"Archive the invoices. <private>{PRIVATE}</private> The token is {SECRET}.")
    talk.add(
        "assistant", "Let's use a lifecycle rule on the bucket. Writing it now.", edit=str(paths.root / "infra/s3.tf")
    )
    return talk


def summary(**fields: object) -> str:
    base: dict[str, object] = {
        "topic": "Invoice archiving",
        "context": "The user asked to archive invoices; the agent wrote an S3 lifecycle rule.",
        "decisions": [LLM_DECISION],
        "rationale": ["Glacier is cheaper for invoices nobody reads."],
        "openQuestions": [],
        "nextSteps": ["Check the first transition in the bucket's metrics."],
        "references": ["infra/s3.tf", "docs/billing.md"],
    }
    return json.dumps(base | fields)


def test_the_llm_summary_is_stored_and_never_sees_secrets_or_private_text(
    service: FlowbabyService, paths: WorkspacePaths, tmp_path: Path, fake: FakeOpenAI
) -> None:
    fake.reply_for = lambda system, user: "```json\n" + summary() + "\n```" if system == PROMPT else None
    reply = asyncio.run(call_json(service, "capture", session(tmp_path, paths, "good").params()))
    assert reply["captured"] and reply["distiller"] == "llm" and "llmFallback" not in reply, reply
    stored = service.store.topic_versions(reply["topicId"])[-1]
    assert stored.decisions == [LLM_DECISION]
    assert stored.references == ["infra/s3.tf", "docs/billing.md"]  # the edited file first
    assert stored.next_steps == ["Check the first transition in the bucket's metrics."]
    assert stored.topic == "Session: Invoice archiving" and "(claude-code session good, turns 1-2" in stored.context
    assert fake.calls() == 1
    sent = fake.requests[0]["text"]
    assert "Archive the invoices." in sent and "infra/s3.tf" in sent  # the turns did go
    assert SECRET not in sent and "90417" not in sent and "vault pin" not in sent


@pytest.mark.parametrize(
    ("mode", "answer", "why"),
    [
        ("500", None, "InternalServerError"),
        ("garbage", None, "not JSON"),
        ("good", '["a list, not an object"]', "not a JSON object"),
        ("good", summary(decisions="one string, not a list"), "decisions"),
        ("good", summary(context="   "), "context"),
    ],
)
def test_an_llm_failure_or_invalid_summary_falls_back_to_the_offline_distillation(
    service: FlowbabyService,
    paths: WorkspacePaths,
    tmp_path: Path,
    fake: FakeOpenAI,
    mode: str,
    answer: str | None,
    why: str,
) -> None:
    fake.mode = mode
    fake.reply_for = lambda system, user: answer
    reply = asyncio.run(
        call_json(service, "capture", session(tmp_path, paths, f"s-{mode}-{len(answer or '')}").params())
    )
    assert reply["captured"] and reply["distiller"] == "offline", reply
    assert why in reply["llmFallback"]
    stored = service.store.topic_versions(reply["topicId"])[-1]
    assert stored.decisions == ["Let's use a lifecycle rule on the bucket."]  # the offline cue's
    assert stored.references == ["infra/s3.tf"]
    assert fake.calls() == 1 and SECRET not in fake.requests[0]["text"]


def test_flowbaby_capture_llm_0_keeps_the_session_away_from_the_llm(
    service: FlowbabyService, paths: WorkspacePaths, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBABY_CAPTURE_LLM", "0")
    reply = asyncio.run(call_json(service, "capture", session(tmp_path, paths, "off").params()))
    assert reply["captured"] and reply["distiller"] == "offline" and "llmFallback" not in reply
    assert fake.calls() == 0
