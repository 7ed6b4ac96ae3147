"""`flowbaby status` and `flowbaby repair`: the background queue and the index, from the shell.

Both call the service's own backgroundStatus, indexStatus and repair, through the process that
owns the workspace when one runs. With none, they own it for the call; graph work they leave
unfinished (repair's re-queued memories, or work parked by an earlier front) is handed on as
when any front leaves (graph.owner.finisher). Text for people; `--json` for scripts.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowbaby.owner_line import call_json, failure_body, open_for
from graph.core.hook_problems import hook_problems, problems_text
from graph.core.workspace_root import DATA_DIR

if TYPE_CHECKING:  # the engine is imported only when no owner answers (flowbaby.owner_line)
    from graph.api import MemoryService

WARM_UP_SEC = 45.0
"""How long `status` waits for an index it had to load itself, so its vector count is true."""
EXIT_NOT_A_WORKSPACE = 2


def add_status_commands(commands: Any) -> None:
    for name, text in (
        ("status", "the background graph queue, the index status and the memory count"),
        ("repair", "re-queue graph building for memories without a graph and embed any without vectors"),
    ):
        parser = commands.add_parser(name, help=text, description=text)
        parser.add_argument("--workspace", default=".", help="workspace folder (default: the current folder)")
        parser.add_argument("--json", action="store_true", help="print the service's JSON replies instead of text")


async def _status(service: MemoryService) -> dict[str, Any]:
    if hasattr(service, "flush_vectors"):  # loaded here and now: count what is indexed, not a cold start
        import asyncio

        with contextlib.suppress(Exception):  # the index status then says what is wrong
            await asyncio.wait_for(service.flush_vectors(), WARM_UP_SEC)
    return {
        "index": await call_json(service, "index_status"),
        "background": await call_json(service, "background_status", {}),
    }


def _queue_text(background: dict[str, Any]) -> str:
    counts = background.get("counts", {})
    states = ("pending", "running", "completed", "failed", "terminated")
    parts = [f"{counts.get(state, 0)} {state}" for state in states if counts.get(state) or state in states[:2]]
    failed = [op for op in background.get("operations", []) if op.get("status") == "failed"]
    lines = [f"queue: {', '.join(parts)}"]
    for op in failed[-3:]:
        lines.append(f"  failed {op['operationId']}: {op.get('errorCode')}: {op.get('error')}")
    return "\n".join(lines)


def _service(root: Path) -> dict[str, Any] | None:
    """The workspace's service (flowbaby start, a hook or ui started it) with its idle seconds."""
    import graph.owner.service_record as service_record  # the standard library alone: no engine for a status
    from graph.core.workspace_root import WorkspacePaths

    record = service_record.running(WorkspacePaths(root))
    if record is not None:
        with contextlib.suppress(ValueError, TypeError):
            last = calendar.timegm(time.strptime(str(record.get("lastActivity")), "%Y-%m-%dT%H:%M:%SZ"))
            record["idleSec"] = max(0, round(time.time() - last))
    return record


def _service_text(record: dict[str, Any] | None) -> str:
    if record is None:
        return "service: none running (the hooks and `flowbaby ui` start it; `flowbaby start` by hand)"
    limit = record.get("idleExitSec") or 0
    leaves = f", exits after {limit:g} s idle" if limit else ", never exits for idleness"
    return (
        f"service: pid {record['pid']} on http://{record.get('host')}:{record['port']} since {record.get('since')}, "
        f"idle {record.get('idleSec', '?')} s{leaves}"
    )


def _index_text(index: dict[str, Any]) -> str:
    counts = index.get("counts", {})
    return (
        f"memories: {counts.get('memories', 0)} ({counts.get('graphIndexed', 0)} with their graph, "
        f"{counts.get('vectors', 0)} with vectors)\n"
        f"index: {index.get('status')}: {index.get('message')}"
    )


async def _run(args: argparse.Namespace) -> int:
    root = Path(args.workspace).expanduser().resolve()
    if not (root / DATA_DIR).is_dir():
        print(f"flowbaby {args.command}: {root} is not a flowbaby workspace (no .flowbaby/ folder)", file=sys.stderr)
        return EXIT_NOT_A_WORKSPACE
    service = await open_for(args.command, str(root))
    if isinstance(service, Exception):  # a FlowbabyError: open_service said why on stderr
        from graph.api import EXIT_WORKSPACE_UNAVAILABLE

        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        if args.command == "repair":
            reply = await call_json(service, "repair")
            text = (
                f"re-queued the graph of {reply['requeuedMemories']} memories"
                + (f" (operation {reply['operationId']})" if reply.get("operationId") else "")
                + f", re-embedding {reply['reembeddedMemories']}\n{_index_text(reply['index'])}"
            )
        else:
            reply = {"service": _service(root), **await _status(service)}
            text = (
                f"workspace: {root}\n{_service_text(reply['service'])}\n{_index_text(reply['index'])}\n"
                f"{_queue_text(reply['background'])}"
            )
            reply["hooks"] = hook_problems(root)
            text = "\n".join(filter(None, [text, problems_text(reply["hooks"])]))
    except Exception as exc:
        body = failure_body(exc)
        if body is None:
            raise
        print(json.dumps(body, indent=2) if args.json else body.get("message") or body["error"])
        return 1
    finally:
        await service.close(1.0, hand_on=True)  # work left unfinished goes on in the background
    print(json.dumps(reply, indent=2, ensure_ascii=False) if args.json else text)
    return 0


def run_status_command(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_run(args))
