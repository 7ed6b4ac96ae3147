"""One retrieval's walk through the code (issue 25 item 6, ARCHITECTURE.md's "One retrieval's walk"):
which project files a warm `retrieveForAgent` calls into, in which order, and how often it hops
between threads. The workspace is the demo's (`flowbaby demo`: 13 summaries, graph built), opened
in this process; the first retrieval warms up, the second is traced."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

from flowbaby.owner_line import call_json

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "api", "bridge", "flowbaby")
QUERY = "Why did we move sessions to Redis?"


@cache
def _project_file(filename: str) -> str | None:
    path = Path(filename)
    try:
        relative = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    return str(relative) if relative.parts[0] in PACKAGES else None


class Tracer:
    """Records (thread, file) at each call into project code, on every thread, while `recording`.
    Installed before the service starts its threads: Python 3.11 cannot profile a running thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []
        self.recording = False
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.recording:
            return
        name = _project_file(frame.f_code.co_filename)
        if name is not None:
            with self._lock:
                self.calls.append((threading.get_ident(), name))

    def __enter__(self) -> Tracer:
        threading.setprofile(self)
        sys.setprofile(self)
        return self

    def __exit__(self, *_: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def walk_of(workspace: Path) -> dict[str, Any]:
    from graph.engine.service import FlowbabyService

    async def run() -> dict[str, Any]:
        with Tracer() as tracer:
            service = await FlowbabyService.open(workspace, log_to_stderr=False, rate_limit_per_minute=0)
            try:
                await call_json(service, "retrieve", {"query": "warm up", "maxResults": 3})
                loop_thread = threading.get_ident()
                tracer.recording = True
                reply = await call_json(service, "retrieve", {"query": QUERY, "maxResults": 3})
                tracer.recording = False
            finally:
                await service.close()
        files: list[str] = []
        for _, name in tracer.calls:
            if name not in files:
                files.append(name)
        hops = sum(
            1
            for (before, _), (after, _) in zip(tracer.calls, tracer.calls[1:], strict=False)
            if before == loop_thread and after != loop_thread
        )
        return {
            "query": QUERY,
            "entries": len(reply.get("entries", [])),
            "files": files,
            "fileCount": len(files),
            "packages": sorted(
                {"/".join(Path(f).parts[:2]) if f.startswith("graph/") else f.split("/")[0] for f in files}
            ),
            "threadHops": hops,
            "threads": len({thread for thread, _ in tracer.calls}),
        }

    return asyncio.run(run())


def run_walk(root: Path) -> dict[str, Any]:
    workspace = root / "walk-ws"
    subprocess.run(
        [sys.executable, "-m", "flowbaby", "demo", "--workspace", str(workspace), "--fresh"],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return walk_of(workspace)


if __name__ == "__main__":
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(run_walk(Path(folder)), indent=2))
