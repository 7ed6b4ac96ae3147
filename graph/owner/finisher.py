"""The last front's hand-on: a detached process that finishes a workspace's graph work.

An agent session often ends seconds after it stored a memory, before the cognee worker has even
started (7-8 s). The front parks its unfinished operations (same ids, no attempt counted) and, as
it leaves, starts this process in a session of its own, through a launcher that exits at once, so
neither a signal to the front's process group nor a kill of its process tree reaches it. It waits
for the front to release the workspace, owns it as any front would (later fronts work through it),
builds and embeds until nothing is left or FLOWBABY_FINISH_SEC pass, and closes: whatever is left
then is parked again and runs at the next start. If another front owns the workspace first, that
front runs the work and this process leaves at once.

The front starts it through graph.owner.hand_on (this module imports the service; the service
imports only that one).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from graph.owner.hand_on import command, start

LOCK_WAIT_SEC = 60.0
"""How long the finisher waits for the front that started it to release the workspace."""
CLOSE_GRACE_SEC = 5.0
"""What a batch still running at the bound gets before it is parked."""


async def finish(workspace: str, spawner: int, bound_sec: float) -> int:
    """Own the workspace once `spawner` has left it, settle its work within `bound_sec`, close."""
    import asyncio
    import logging

    from graph.core.contract import ErrorCode, FlowbabyError
    from graph.engine.service import FlowbabyService

    log = logging.getLogger("flowbaby.finisher")
    started = time.monotonic()
    while True:
        try:
            service = await FlowbabyService.open(workspace, log_to_stderr=False)
            break
        except FlowbabyError as error:
            if error.code is not ErrorCode.WORKSPACE_BUSY:
                return 1  # the workspace is gone or unreadable: the next start says why
            owner = error.details.get("ownerPid")
            if owner not in (None, spawner) or time.monotonic() - started > LOCK_WAIT_SEC:
                return 0  # another front owns it and runs the work
            await asyncio.sleep(0.1)
    log.info("taking over the graph work pid %d left unfinished (at most %.0fs)", spawner, bound_sec)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(service.settle(), max(0.0, bound_sec - (time.monotonic() - started)))
    finally:
        left = service.store.count_operations()
        if left:
            log.warning("finisher bound reached: %d operations parked for the next start", left)
        await service.close(CLOSE_GRACE_SEC)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.owner.finisher")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--spawner", type=int, required=True)
    parser.add_argument("--bound-sec", type=float, required=True)
    parser.add_argument("--detach", action="store_true", help="start the finisher and exit at once")
    args = parser.parse_args()
    if args.detach:  # the launcher: start the finisher in a session of its own and leave at once
        start(command(Path(args.workspace), args.spawner, args.bound_sec, detach=False))
        sys.exit(0)
    import asyncio

    os.umask(0o077)  # as every front: what it writes under .flowbaby/ is the user's alone
    code = asyncio.run(finish(args.workspace, args.spawner, args.bound_sec))
    sys.stderr.flush()
    os._exit(code)  # cognee's and LanceDB's leftover threads must not hold the exit


if __name__ == "__main__":
    main()
