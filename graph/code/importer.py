"""`flowbaby import adr` / `import docs`: records staged through the service as any front's summaries.

A record is compared with its topic's newest stored version first: the same content adds nothing,
changed content stages a new version (which supersedes the old one, contract section 7)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from graph.code.adr import OutsideRepository, inside, read_adrs, read_text_file, relative_path
from graph.code.design_docs import parse_doc
from graph.core.contract import (
    IMPORT,
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    MemoryVersionsResponse,
    RefusedRequest,
    Succeeded,
    Writer,
    format_timestamp,
    utc_now,
    validate_request,
)
from graph.core.ingest_redaction import Redactor, load_user_patterns
from graph.core.methods import INGEST, request_of
from graph.core.settings import load_settings
from graph.core.workspace import WorkspacePaths

BACKLOG_RETRIES = 20
BACKLOG_WAIT_SEC = 30.0
"""A team server holds imports to its backlog limit (a local owner does not): a refused record is sent
again after the server's retryAfterSec (at most this), up to BACKLOG_RETRIES times."""
COMPARED = ("topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references")


class Importer(Protocol):
    """The service calls an import needs (FlowbabyService, OwnerClient or a remote service)."""

    async def ingest(
        self, request: FlowbabyIngestRequest, *, bulk: bool = ..., writer: Writer | None = ...
    ) -> FlowbabyIngestResponse: ...
    async def audit_refused(self, refusal: RefusedRequest) -> Succeeded: ...
    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse: ...


def workspace_redactor(base: Path) -> Redactor:
    """The redaction ingest applies in this workspace (FLOWBABY_REDACT, the user's patterns)."""
    enabled = load_settings(WorkspacePaths(base)).redact
    return Redactor(enabled, load_user_patterns() if enabled else [])


def redacted(payload: dict[str, Any], redactor: Redactor) -> tuple[dict[str, Any], int]:
    """The record as ingest will store it, and how many secrets went: redacted before the comparison
    with the stored version, so a file with a secret is `unchanged` when imported again (ingest
    redacts it once more, to no effect)."""
    try:
        request = validate_request(FlowbabyIngestRequest, payload)
    except FlowbabyError:
        return payload, 0  # ingest names the fault
    clean, count = redactor.summary(request)
    if not count:
        return payload, 0
    fields = clean.model_dump(mode="json", include={"topic", "context", "timeScope", *COMPARED})
    return {**payload, **{k: v for k, v in fields.items() if k in payload}}, count


async def _stage(service: Importer, payload: dict[str, Any]) -> str:
    """`added`, `updated` (a new version) or `unchanged`."""
    topic_id = payload["metadata"]["topicId"]
    try:
        versions = (await service.memory_versions(topic_id)).model_dump(mode="json")["versions"]
    except ContractFailure as failure:
        if failure.code.value != ErrorCode.NOT_FOUND.value:
            raise
        versions = []
    if versions:
        newest = versions[-1]
        same = all(newest.get(key, []) == payload.get(key, []) for key in COMPARED)
        if same and newest["status"] == payload["metadata"]["status"]:
            return "unchanged"
    for attempt in range(BACKLOG_RETRIES + 1):
        try:
            request = await request_of(service, INGEST, payload)
            await service.ingest(request, bulk=True, writer=IMPORT)  # a user's import is not an agent's burst
            break
        except ContractFailure as failure:
            if failure.code.value != ErrorCode.BACKLOG.value or attempt == BACKLOG_RETRIES:
                raise
            await asyncio.sleep(min(float(failure.details.get("retryAfterSec") or 1), BACKLOG_WAIT_SEC))
    return "updated" if versions else "added"


def _summary(rows: list[dict[str, str]], skipped: list[str], secrets: int) -> dict[str, Any]:
    counts = {action: sum(1 for r in rows if r["action"] == action) for action in ("added", "updated", "unchanged")}
    return {"success": True, **counts, "redacted": secrets, "skipped": skipped, "records": rows}


def within_repository(path: Path, root: Path) -> Path:
    """A folder or file the user or `.adr-dir` named: inside the repository, or INVALID_WORKSPACE_PATH."""
    try:
        return inside(path, root)
    except OutsideRepository as exc:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, str(exc)) from None


async def import_adrs(
    service: Importer, folder: Path, base: Path, *, root: Path | None = None, redactor: Redactor | None = None
) -> dict[str, Any]:
    """Every ADR under `folder`; paths are recorded relative to `base` (the workspace). Nothing outside
    `root` (the repository, default `base`) is read, through `..` or a link."""
    root = root or base
    if not folder.is_dir():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Not a folder of ADRs: {folder}")
    redactor = redactor or workspace_redactor(base)
    adrs, skipped = read_adrs(within_repository(folder, root), base, root)
    now = utc_now()
    rows = []
    secrets = 0
    for adr in adrs:
        payload, count = redacted(adr.payload(now), redactor)
        secrets += count
        action = await _stage(service, payload)
        status = payload["metadata"]["status"]
        rows.append({"topicId": adr.topic_id, "status": status, "adrStatus": adr.status, "action": action})
    return _summary(rows, skipped, secrets)


def markdown_files(paths: list[Path], root: Path) -> tuple[list[Path], list[str]]:
    """The files given, and the `*.md` files under the folders given, each once, in order, resolved;
    and those under the folders that lead outside `root` (skipped). A path given that leads outside
    is INVALID_WORKSPACE_PATH."""
    found: dict[Path, None] = {}
    skipped: list[str] = []
    for given in paths:
        if not given.exists():
            raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"No such file or folder: {given}")
        path = within_repository(given, root)
        if path.is_file():
            found[path] = None
            continue
        for inner in sorted(p for p in path.rglob("*.md") if p.is_file()):
            try:
                found[inside(inner, root)] = None
            except OutsideRepository as exc:
                skipped.append(str(exc))
    return list(found), skipped


async def import_docs(
    service: Importer, paths: list[Path], base: Path, *, root: Path | None = None, redactor: Redactor | None = None
) -> dict[str, Any]:
    """One summary per section of each markdown file (none outside `root`, default `base`)."""
    root = root or base
    now = utc_now()
    rows: list[dict[str, str]] = []
    files, skipped = markdown_files(paths, root)
    redactor = redactor or workspace_redactor(base)
    secrets = 0
    for path in files:
        relative = relative_path(path, base)
        try:
            text = read_text_file(path)
        except (OSError, ValueError) as exc:
            skipped.append(f"{relative}: {exc}")
            continue
        created = format_timestamp(datetime.fromtimestamp(os.stat(path).st_mtime, UTC))
        for section in parse_doc(text, relative):
            payload, count = redacted(section.payload(now, created), redactor)
            secrets += count
            action = await _stage(service, payload)
            rows.append({"topicId": section.topic_id, "status": "Active", "action": action})
    return _summary(rows, skipped, secrets)
