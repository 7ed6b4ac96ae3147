"""The ADR import rate (issue 30): 300 generated Nygard ADRs, every third superseding the one before,
imported through an in-process FlowbabyService (parse, compare with the stored topic, stage); then the
same folder again (all unchanged), and the parse alone. Graph building runs after, in the background,
and is not part of the rate."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from graph.code.adr import read_adrs
from graph.code.importer import import_adrs
from graph.engine.service import FlowbabyService

ADRS = 300


def write_adrs(folder: Path, count: int = ADRS) -> None:
    folder.mkdir(parents=True)
    for n in range(1, count + 1):
        superseded = n % 3 != 0 and n < count
        status = f"Superseded by [{n + 1}. Decision {n + 1}](000{n + 1}-decision.md)" if superseded else "Accepted"
        (folder / f"{n:04d}-decision-{n}.md").write_text(
            f"# {n}. Decision {n} about service {n % 17}\n\nDate: 2025-01-{1 + n % 28:02d}\n\n## Status\n\n{status}\n\n"
            f"## Context\n\nService {n % 17} needs a choice about its storage and its retries ({n}).\n\n"
            f"## Decision\n\nWe will use option {n % 5} for service {n % 17}.\n\n"
            "## Consequences\n\n* One more thing to operate.\n* Retries are bounded.\n"
        )


async def _run(root: Path) -> dict[str, Any]:
    workspace = root / "ws"
    folder = workspace / "doc/adr"
    write_adrs(folder)
    started = time.perf_counter()
    adrs, _ = read_adrs(folder, workspace)
    parse_sec = time.perf_counter() - started
    service = await FlowbabyService.open(workspace, log_to_stderr=False)
    try:
        started = time.perf_counter()
        first = await import_adrs(service, folder, workspace)
        first_sec = time.perf_counter() - started
        started = time.perf_counter()
        again = await import_adrs(service, folder, workspace)
        again_sec = time.perf_counter() - started
    finally:
        await service.close(1.0)
    return {
        "adrs": len(adrs),
        "parsePerSec": round(len(adrs) / parse_sec),
        "importPerSec": round(first["added"] / first_sec, 1),
        "importSec": round(first_sec, 2),
        "reimportUnchangedPerSec": round(again["unchanged"] / again_sec, 1),
        "added": first["added"],
        "unchangedOnReimport": again["unchanged"],
    }


def run_code_import(root: Path) -> dict[str, Any]:
    return asyncio.run(_run(root))
