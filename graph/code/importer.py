"""`flowbaby import adr` / `import docs`: records staged through the service as any front's summaries.

A record is compared with its topic's newest stored version first: the same content adds nothing,
changed content stages a new version (which supersedes the old one, contract section 7)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from graph.code.adr import read_adrs, read_text_file, relative_path
from graph.code.design_docs import parse_doc
from graph.core.contract import ContractFailure, ErrorCode, FlowbabyError, format_timestamp, utc_now

BACKLOG_RETRIES = 20
BACKLOG_WAIT_SEC = 30.0
"""A team server holds imports to its backlog limit (a local owner does not): a refused record is sent
again after the server's retryAfterSec (at most this), up to BACKLOG_RETRIES times."""
COMPARED = ("topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references")


class Importer(Protocol):
    """The two service calls an import needs (FlowbabyService, OwnerClient or a remote service)."""

    async def ingest(self, params: Any, *, bulk: bool = ...) -> dict[str, Any]: ...
    async def memory_versions(self, topic_id: str) -> dict[str, Any]: ...


async def _stage(service: Importer, payload: dict[str, Any]) -> str:
    """`added`, `updated` (a new version) or `unchanged`."""
    topic_id = payload["metadata"]["topicId"]
    try:
        versions = (await service.memory_versions(topic_id))["versions"]
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
            await service.ingest(payload, bulk=True)  # a user's import is not an agent's burst
            break
        except ContractFailure as failure:
            if failure.code.value != ErrorCode.BACKLOG.value or attempt == BACKLOG_RETRIES:
                raise
            await asyncio.sleep(min(float(failure.details.get("retryAfterSec") or 1), BACKLOG_WAIT_SEC))
    return "updated" if versions else "added"


def _summary(rows: list[dict[str, str]], skipped: list[str]) -> dict[str, Any]:
    counts = {action: sum(1 for r in rows if r["action"] == action) for action in ("added", "updated", "unchanged")}
    return {"success": True, **counts, "skipped": skipped, "records": rows}


async def import_adrs(service: Importer, folder: Path, base: Path) -> dict[str, Any]:
    """Every ADR under `folder`; paths are recorded relative to `base` (the workspace)."""
    if not folder.is_dir():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Not a folder of ADRs: {folder}")
    adrs, skipped = read_adrs(folder, base)
    now = utc_now()
    rows = []
    for adr in adrs:
        payload = adr.payload(now)
        action = await _stage(service, payload)
        status = payload["metadata"]["status"]
        rows.append({"topicId": adr.topic_id, "status": status, "adrStatus": adr.status, "action": action})
    return _summary(rows, skipped)


def markdown_files(paths: list[Path]) -> list[Path]:
    """The files given, and the `*.md` files under the folders given, each once, in order."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            found.update(dict.fromkeys(sorted(p for p in path.rglob("*.md") if p.is_file())))
        elif path.is_file():
            found[path] = None
        else:
            raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"No such file or folder: {path}")
    return list(found)


async def import_docs(service: Importer, paths: list[Path], base: Path) -> dict[str, Any]:
    """One summary per section of each markdown file."""
    now = utc_now()
    rows: list[dict[str, str]] = []
    skipped: list[str] = []
    for path in markdown_files(paths):
        relative = relative_path(path, base)
        try:
            text = read_text_file(path)
        except (OSError, ValueError) as exc:
            skipped.append(f"{relative}: {exc}")
            continue
        created = format_timestamp(datetime.fromtimestamp(os.stat(path).st_mtime, UTC))
        for section in parse_doc(text, relative):
            action = await _stage(service, section.payload(now, created))
            rows.append({"topicId": section.topic_id, "status": "Active", "action": action})
    return _summary(rows, skipped)
