"""ADR and design-doc parsing (graph.code.adr, graph.code.design_docs) and the import's
add / new version / nothing-new rule (graph.code.importer), against an in-process store."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from graph.code import importer
from graph.code.adr import parse_adr, read_adrs
from graph.code.design_docs import parse_doc, slugify
from graph.code.freshness import parse_reference
from graph.code.importer import COMPARED, import_adrs, import_docs
from graph.core.contract import (
    ErrorCode,
    FlowbabyError,
    FlowbabyIngestRequest,
    MemoryVersionsResponse,
    validate_request,
)

FIXTURES = Path(__file__).resolve().parents[2] / "support" / "fixtures" / "adr"


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_both_formats_give_statuses_supersession_chains_and_kept_adr_statuses(style: str) -> None:
    adrs, skipped = read_adrs(FIXTURES / style, FIXTURES)
    assert skipped == []
    by_number = {a.number: a for a in adrs}
    # a chain of three: 2 -> 3 -> 4
    assert [by_number[n].superseded_by for n in (2, 3, 4)] == [3, 4, None]
    assert [by_number[n].memory_status().value for n in (1, 2, 3, 4, 5, 6)] == [
        "DecisionRecord",
        "Superseded",
        "Superseded",
        "DecisionRecord",
        "Active",
        "Active",
    ]
    for number, word in ((5, "Deprecated"), (6, "Rejected")):
        payload = by_number[number].payload("2026-12-01T00:00:00Z")
        assert by_number[number].status == word
        assert payload["topic"].startswith(f"ADR-000{number} ({word}): ")
        assert payload["context"].startswith(f"Status: {word}.")
        assert all(d.startswith(f"[{word}] ") for d in payload["decisions"]) and payload["decisions"]
    for adr in adrs:
        payload = adr.payload("2026-12-01T00:00:00Z")
        request = validate_request(FlowbabyIngestRequest, payload)
        assert request.metadata.topicId == f"adr-{adr.number:04d}"
        assert payload["references"][0] == f"{style}/{Path(adr.path).name}"
        assert adr.context and adr.decisions and adr.date
    latest = by_number[4].payload("2026-12-01T00:00:00Z")
    assert latest["metadata"]["createdAt"].startswith("2025-")
    assert latest["metadata"]["updatedAt"] == "2026-12-01T00:00:00Z"


def test_madr_two_status_bullets_and_nygard_supersedes_only_in_the_newer_record(tmp_path: Path) -> None:
    madr2 = parse_adr(
        FIXTURES / "madr/0007-sign-session-cookies.md",
        (FIXTURES / "madr/0007-sign-session-cookies.md").read_text(),
        "x",
    )
    assert (madr2.number, madr2.status, madr2.date) == (7, "Accepted", "2024-11-05T00:00:00.000Z")
    (tmp_path / "0001-old.md").write_text("# 1. Old way\n\n## Status\n\nAccepted\n\n## Decision\n\nOld.\n")
    (tmp_path / "0002-new.md").write_text(
        "# 2. New way\n\n## Status\n\nAccepted\n\nSupersedes [1. Old way](0001-old.md)\n\n## Decision\n\nNew.\n"
    )
    (tmp_path / "README.md").write_text("# Decisions\n")
    (tmp_path / "notes.md").write_text("# Just notes\n")
    adrs, skipped = read_adrs(tmp_path, tmp_path)
    assert [(a.number, a.memory_status().value, a.superseded_by) for a in adrs] == [
        (1, "Superseded", 2),
        (2, "DecisionRecord", None),
    ]
    assert skipped == ["notes.md: no ADR number in the file name or the title"]


def test_docs_split_into_sections_with_file_and_heading_references() -> None:
    text = (
        "# Billing design\n\nIntro to billing.\n\n## Reconciliation\n\nBatches of 500.\n\n```\n# not a heading\n```\n\n"
        "### Retries\n\nThree retries.\n\n#### Detail\n\nStays in Retries.\n\n## Empty\n\n## Reconciliation\n\nAgain.\n"
    )
    sections = parse_doc(text, "docs/billing.md")
    assert [(s.heading, s.slug) for s in sections] == [
        ("Billing design", "billing-design"),
        ("Reconciliation", "reconciliation"),
        ("Retries", "retries"),
        ("Reconciliation", "reconciliation-1"),
    ]
    assert "# not a heading" in sections[1].text
    assert "Stays in Retries." in sections[2].text
    payload = sections[2].payload("2026-12-01T00:00:00Z", "2026-11-01T00:00:00Z")
    assert payload["topic"] == "Billing design: Retries"
    assert payload["references"] == ["docs/billing.md", "docs/billing.md#retries"]
    assert payload["metadata"]["topicId"] == "doc:docs/billing.md#retries"
    validate_request(FlowbabyIngestRequest, payload)
    assert slugify("What's new? (v2)") == "whats-new-v2"
    # the heading reference checks as the file (the anchor is not a path)
    ref = parse_reference("docs/billing.md#retries")
    assert ref is not None and (ref.kind, ref.path) == ("file", "docs/billing.md")


class Store:
    """The two service calls an import makes, over a list of versions per topic (contract section 7)."""

    def __init__(self, refusals: int = 0) -> None:
        self.topics: dict[str, list[dict[str, Any]]] = {}
        self.ingested = 0
        self.refusals = refusals
        """Backlog refusals to answer first, as a team server does (it keeps its limit for imports)."""

    async def ingest(
        self, request: FlowbabyIngestRequest, *, bulk: bool = False, writer: str | None = None
    ) -> dict[str, Any]:
        assert bulk  # an import is not held to the agents' backlog limit
        assert writer == "import"  # an import's memories are recorded as an import's
        if self.refusals:
            self.refusals -= 1
            raise FlowbabyError(ErrorCode.BACKLOG, "Background queue full (5 operations max).", retryAfterSec=30)
        self.ingested += 1
        versions = self.topics.setdefault(request.metadata.topicId, [])
        stamp = "2026-01-01T00:00:00.000Z"
        versions.append(
            {
                **request.model_dump(mode="json", include=set(COMPARED)),
                "status": request.metadata.status.value,
                "memoryId": f"m{self.ingested}",
                "version": len(versions) + 1,
                "planId": None,
                "sessionId": None,
                "agentName": None,
                "createdAt": stamp,
                "updatedAt": stamp,
                "graphState": "pending",
            }
        )
        return {"success": True}

    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        if topic_id not in self.topics:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{topic_id}"')
        return MemoryVersionsResponse.model_validate({"topicId": topic_id, "versions": self.topics[topic_id]})


def test_importing_twice_adds_nothing_and_a_changed_adr_becomes_a_new_version(tmp_path: Path) -> None:
    folder = tmp_path / "doc/adr"
    shutil.copytree(FIXTURES / "nygard", folder)
    store = Store()
    first = asyncio.run(import_adrs(store, folder, tmp_path))
    assert (first["added"], first["updated"], first["unchanged"]) == (6, 0, 0)
    assert store.ingested == 6
    again = asyncio.run(import_adrs(store, folder, tmp_path))
    assert (again["added"], again["updated"], again["unchanged"], store.ingested) == (0, 0, 6, 6)
    # ADR 5 is revived, ADR 6 gains a consequence
    deprecated = folder / "0005-expose-a-soap-api-to-partners.md"
    deprecated.write_text(deprecated.read_text().replace("Deprecated", "Accepted"))
    rejected = folder / "0006-use-a-graphql-gateway.md"
    rejected.write_text(rejected.read_text() + "* Clients would need a new SDK.\n")
    third = asyncio.run(import_adrs(store, folder, tmp_path))
    assert (third["added"], third["updated"], third["unchanged"]) == (0, 2, 4)
    assert [v["status"] for v in store.topics["adr-0005"]] == ["Active", "DecisionRecord"]
    assert len(store.topics["adr-0006"]) == 2
    assert store.topics["adr-0001"][0]["references"] == ["doc/adr/0001-record-architecture-decisions.md"]


def test_docs_import_is_idempotent_and_bad_paths_are_refused(tmp_path: Path) -> None:
    doc = tmp_path / "docs/design.md"
    doc.parent.mkdir()
    doc.write_text("# Design\n\nOverview.\n\n## Storage\n\nLedger in CockroachDB.\n")
    store = Store()
    first = asyncio.run(import_docs(store, [tmp_path / "docs"], tmp_path))
    assert (first["added"], first["unchanged"]) == (2, 0)
    assert asyncio.run(import_docs(store, [doc], tmp_path))["unchanged"] == 2
    doc.write_text(doc.read_text() + "\n## Caching\n\nValkey.\n")
    third = asyncio.run(import_docs(store, [doc], tmp_path))
    assert (third["added"], third["updated"], third["unchanged"]) == (1, 0, 2)
    with pytest.raises(FlowbabyError) as missing:
        asyncio.run(import_docs(store, [tmp_path / "nope.md"], tmp_path))
    assert missing.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    with pytest.raises(FlowbabyError):
        asyncio.run(import_adrs(store, tmp_path / "no-adrs", tmp_path))


def test_files_with_nul_or_bytes_that_are_not_utf8_are_skipped_with_the_reason(tmp_path: Path) -> None:
    """A hostile repository's binary `.md` files: skipped, and the rest of the import goes on."""
    folder = tmp_path / "doc/adr"
    folder.mkdir(parents=True)
    (folder / "0001-use-postgres.md").write_text(
        "# 1. Use Postgres\n\n## Status\n\nAccepted\n\n## Decision\n\nPostgres.\n"
    )
    (folder / "0002-blob.md").write_text("# 2. Blob\n\n## Status\n\nAccepted\n\x00\x00\n")
    (folder / "0003-latin1.md").write_bytes(b"# 3. Caf\xe9\n")
    adrs, skipped = read_adrs(folder, tmp_path)
    assert [adr.number for adr in adrs] == [1]
    assert skipped[0] == "doc/adr/0002-blob.md: holds NUL (U+0000) characters, not text"
    assert skipped[1].startswith("doc/adr/0003-latin1.md: 'utf-8' codec can't decode")
    alone = asyncio.run(import_docs(Store(), [folder / "0001-use-postgres.md"], tmp_path))
    result = asyncio.run(import_docs(Store(), [folder], tmp_path))
    assert result["added"] == alone["added"] > 0 and result["skipped"] == skipped


def test_a_backlog_refusal_is_waited_out_and_nothing_is_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(importer.asyncio, "sleep", sleep)
    monkeypatch.setattr(importer, "BACKLOG_WAIT_SEC", 0.5)
    store = Store(refusals=3)
    reply = asyncio.run(import_adrs(store, FIXTURES / "madr", tmp_path, root=FIXTURES))
    assert (reply["added"], store.ingested, slept) == (7, 7, [0.5, 0.5, 0.5])
    monkeypatch.setattr(importer, "BACKLOG_RETRIES", 2)
    with pytest.raises(FlowbabyError) as refused:
        asyncio.run(import_adrs(Store(refusals=5), FIXTURES / "madr", tmp_path, root=FIXTURES))
    assert refused.value.code is ErrorCode.BACKLOG
