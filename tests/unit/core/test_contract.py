"""The contract models: every INVALID_PAYLOAD case names its field."""

from __future__ import annotations

import pytest

from graph.core.contract import (
    MAX_PAYLOAD_CHARS,
    ErrorCode,
    FlowbabyError,
    FlowbabyIngestRequest,
    validate_request,
)
from tests.conftest import summary


def invalid(payload: object) -> FlowbabyError:
    with pytest.raises(FlowbabyError) as caught:
        validate_request(FlowbabyIngestRequest, payload)
    assert caught.value.code is ErrorCode.INVALID_PAYLOAD
    return caught.value


def test_valid_summary_is_normalised() -> None:
    request = validate_request(FlowbabyIngestRequest, summary(extra_field={"ignored": True}))
    assert request.metadata.createdAt == "2025-03-01T10:00:00.000Z"
    assert request.metadata.status.value == "Active"
    assert not hasattr(request, "extra_field")


def test_offset_timestamps_become_utc() -> None:
    payload = summary()
    payload["metadata"]["createdAt"] = "2025-03-01T12:00:00+02:00"
    assert validate_request(FlowbabyIngestRequest, payload).metadata.createdAt == "2025-03-01T10:00:00.000Z"


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"])
def test_timestamps_beyond_utc_range_are_invalid_payload(stamp: str) -> None:
    payload = summary()
    payload["metadata"]["createdAt"] = stamp
    with pytest.raises(FlowbabyError) as failure:
        validate_request(FlowbabyIngestRequest, payload)
    assert failure.value.code is ErrorCode.INVALID_PAYLOAD
    assert failure.value.details["fields"] == ["metadata.createdAt"]


def test_status_defaults_to_active() -> None:
    payload = summary()
    del payload["metadata"]["status"]
    assert validate_request(FlowbabyIngestRequest, payload).metadata.status.value == "Active"


@pytest.mark.parametrize(
    ("mutate", "field", "phrase"),
    [
        (lambda p: p.pop("topic"), "topic", 'Field "topic" is required and must be a non-empty string'),
        (lambda p: p.update(topic="   "), "topic", "non-empty string"),
        (lambda p: p.update(topic=42), "topic", "non-empty string"),
        (lambda p: p.update(context=None), "context", "non-empty string"),
        (lambda p: p.update(metadata="x"), "metadata", "must be an object"),
        (lambda p: p["metadata"].update(createdAt="last tuesday"), "metadata.createdAt", "ISO-8601"),
        (lambda p: p["metadata"].update(updatedAt=20250301), "metadata.updatedAt", "non-empty string"),
        (lambda p: p["metadata"].update(status="Archived"), "metadata.status", "Active, Superseded, DecisionRecord"),
        (lambda p: p["metadata"].update(topicId="   "), "metadata.topicId", "non-empty string"),
        (lambda p: p.update(decisions=["ok", 3]), "decisions.1", "non-empty string"),
        (lambda p: p.update(references="PR #1"), "references", "array of strings"),
        (lambda p: p.update(topic="bad \ud800 surrogate"), "topic", "UTF-8"),
        (lambda p: p.update(decisions=["ok", "a \x00 nul"]), "decisions.1", "NUL (U+0000)"),
        (lambda p: p["metadata"].update(topicId="t\x00"), "metadata.topicId", "NUL (U+0000)"),
    ],
)
def test_violations_name_the_field(mutate, field: str, phrase: str) -> None:
    payload = summary()
    mutate(payload)
    error = invalid(payload)
    assert f'"{field}"' in error.message
    assert phrase in error.message
    assert field in error.details["fields"]


def test_payload_over_limit_is_rejected() -> None:
    error = invalid(summary(context="x" * (MAX_PAYLOAD_CHARS + 1)))
    assert '"payload"' in error.message and str(MAX_PAYLOAD_CHARS) in error.message


def test_payload_at_limit_is_accepted() -> None:
    payload = summary(decisions=[], rationale=[], openQuestions=[], nextSteps=[], references=[])
    payload["context"] = "y" * (MAX_PAYLOAD_CHARS - len(payload["topic"]))
    assert validate_request(FlowbabyIngestRequest, payload).char_count() == MAX_PAYLOAD_CHARS


def test_odd_unicode_is_kept() -> None:
    text = "Ünïcödé — 日本語 🚀 e\u0301 \u200b zero-width"
    request = validate_request(FlowbabyIngestRequest, summary(topic=text))
    assert request.topic == text


def test_params_must_be_an_object() -> None:
    assert '"params"' in invalid(["topic"]).message


@pytest.mark.parametrize(
    "metadata", ["absent", None, {}, {"topicId": "", "createdAt": None, "updatedAt": None, "status": None}]
)
def test_every_front_fills_the_same_metadata_defaults(metadata: object) -> None:
    """One rule for ingestForAgent and storeMemory, over every front: what is left out is filled in."""
    payload: dict[str, object] = {"topic": "t", "context": "c"}
    if metadata != "absent":
        payload["metadata"] = metadata
    request = validate_request(FlowbabyIngestRequest, payload)
    assert len(request.metadata.topicId) == 16 and int(request.metadata.topicId, 16) >= 0
    assert request.metadata.createdAt.endswith("Z") and request.metadata.updatedAt == request.metadata.createdAt
    assert request.metadata.status.value == "Active"
    again = validate_request(FlowbabyIngestRequest, payload)
    assert again.metadata.topicId != request.metadata.topicId  # never a version of another memory


def test_updated_at_defaults_to_the_given_created_at() -> None:
    payload = {"topic": "t", "context": "c", "metadata": {"createdAt": "2025-03-01T12:00:00+02:00"}}
    metadata = validate_request(FlowbabyIngestRequest, payload).metadata
    assert metadata.createdAt == metadata.updatedAt == "2025-03-01T10:00:00.000Z"
    bad = invalid({"topic": "t", "context": "c", "metadata": {"createdAt": "last tuesday"}})
    assert bad.details["fields"] == ["metadata.createdAt"]  # reported once, not again on updatedAt
