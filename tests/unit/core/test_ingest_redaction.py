"""Redaction at ingest: the patterns (session memory's, URL credentials, the user's file), the
switch FLOWBABY_REDACT=0, and the service storing the redacted text with its count in the reply
and the audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.core.contract import FlowbabyError, FlowbabyIngestRequest
from graph.core.ingest_redaction import Redactor, load_user_patterns
from graph.core.settings import load_settings
from graph.core.workspace import resolve_workspace
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.unit.engine.test_hardening import run, service  # noqa: F401 (fixtures)

KEY = "sk-proj-4fJ9xQ2mZ7vB1nK8rT3wY6uE"
URL = "postgresql://billing:hunter2Secret9@db.internal:5432/ledger"


def test_keys_and_url_passwords_are_redacted() -> None:
    redactor = Redactor(True)
    text, count = redactor.text(f"key {KEY} and {URL} and https://example.com/path and mongodb://u:p@h/x")
    assert count == 3
    assert text == (
        "key [redacted] and postgresql://billing:[redacted]@db.internal:5432/ledger and https://example.com/path "
        "and mongodb://u:[redacted]@h/x"
    )
    assert redactor.text(text) == (text, 0)  # redacting again finds nothing more


def test_every_text_field_is_redacted_and_the_switch_turns_it_off() -> None:
    request = FlowbabyIngestRequest.model_validate(
        summary(
            "t",
            topic=f"Key {KEY}",
            decisions=[f"use {URL}"],
            rationale=[KEY],
            openQuestions=[KEY],
            nextSteps=[KEY],
            references=[URL],
            timeScope=KEY,
        )
    )
    redacted, count = Redactor(True).summary(request)
    assert count == 7 and KEY not in redacted.model_dump_json() and "hunter2" not in redacted.model_dump_json()
    assert redacted.metadata == request.metadata
    raw, none = Redactor(False).summary(request)
    assert (raw, none) == (request, 0)


def test_user_patterns_come_from_the_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_user_patterns() == []
    (tmp_path / "flowbaby").mkdir()
    (tmp_path / "flowbaby" / "redact_patterns").write_text("# customer ids\nCUST-[0-9]{6}\n\n")
    patterns = load_user_patterns()
    assert Redactor(True, patterns).text("ticket for CUST-123456 and CUST-12") == (
        "ticket for [redacted] and CUST-12",
        1,
    )
    (tmp_path / "flowbaby" / "redact_patterns").write_text("ok\n(unclosed\n")
    with pytest.raises(FlowbabyError) as bad:
        load_user_patterns()
    assert "line 2" in bad.value.message


def test_flowbaby_redact_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    paths_ = resolve_workspace(root)
    assert load_settings(paths_).redact is True
    paths_.env_file.write_text("FLOWBABY_REDACT=0\n")
    assert load_settings(paths_).redact is True  # a cloned repository's .env cannot turn it off
    monkeypatch.setenv("FLOWBABY_TRUSTED_WORKSPACES", str(root))
    assert load_settings(paths_).redact is False
    paths_.env_file.write_text("FLOWBABY_REDACT=maybe\n")
    with pytest.raises(FlowbabyError):
        load_settings(paths_)


def test_the_service_stores_redacted_text_and_counts_it(service: FlowbabyService) -> None:  # noqa: F811
    async def body() -> tuple[dict[str, Any], dict[str, Any]]:
        ingested = await call_json(service, "ingest", summary("leaky", context=f"Connect with {URL} using {KEY}."))
        stored = await call_json(service, "store_memory", {"topic": "Plain", "context": "Nothing secret here."})
        return ingested, stored

    ingested, stored = run(body)
    assert ingested["redacted"] == 2 and stored["redacted"] == 0
    [leaky] = service.store.topic_versions("leaky")
    assert leaky.context == "Connect with postgresql://billing:[redacted]@db.internal:5432/ledger using [redacted]."
    lines = [json.loads(line) for line in service.paths.audit_log.read_text().splitlines()]
    assert [(e["command"], e["redacted"]) for e in lines] == [("ingestForAgent", 2), ("storeMemory", 0)]
    assert KEY.encode() not in service.paths.store_db.read_bytes()
