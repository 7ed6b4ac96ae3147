"""`flowbaby export` and `flowbaby import` at 100k memory versions, through the service and the CLI's
own functions (flowbaby.memories_command), on the embedded store: `python -m tests.bench.export_import`.

The source store is filled straight through its table (tests/bench/memory_list.rows); services are
never opened, so no embedding or graph building runs (import only queues them: that work is the
same as for any staged memory and is measured elsewhere). Reported: export seconds and file size,
read-and-validate seconds, import seconds (a dry run over every batch, then the import), and a
second import of the same file (nothing added).
"""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from flowbaby.memories_command import export_to, import_from, read_export
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, resolve_workspace
from graph.engine.service import FlowbabyService
from tests.bench.memory_list import fill_sqlite, rows

COUNT = 100_000


def _service(root: Path) -> FlowbabyService:
    root.mkdir(parents=True, exist_ok=True)
    paths = resolve_workspace(root)
    return FlowbabyService(paths, Settings(llm=LLMSettings(), embedding_model=str(root)), WorkspaceLock(paths), None)


def run(count: int = COUNT) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        source_root = base / "source"
        source_root.mkdir()
        fill_sqlite(resolve_workspace(source_root).store_db, rows(count)).close()
        source, target = _service(source_root), _service(base / "target")

        async def body() -> dict[str, Any]:
            started = time.perf_counter()
            out = io.StringIO()
            exported = await export_to(source, out)
            export_sec = time.perf_counter() - started
            path = base / "memories.jsonl"
            path.write_text(out.getvalue(), encoding="utf-8")
            started = time.perf_counter()
            records, errors = read_export(path)
            read_sec = time.perf_counter() - started
            assert not errors, errors[:3]
            started = time.perf_counter()
            first = await import_from(target, records)
            import_sec = time.perf_counter() - started
            started = time.perf_counter()
            second = await import_from(target, records)
            again_sec = time.perf_counter() - started
            return {
                "versions": exported,
                "exportSec": round(export_sec, 2),
                "fileMB": round(path.stat().st_size / 1e6, 1),
                "readValidateSec": round(read_sec, 2),
                "importSec": round(import_sec, 2),
                "imported": first["imported"],
                "queuedOperations": first["queuedOperations"],
                "importAgainSec": round(again_sec, 2),
                "importedAgain": second["imported"],
            }

        try:
            return asyncio.run(body())
        finally:
            source.store.close()
            target.store.close()


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
