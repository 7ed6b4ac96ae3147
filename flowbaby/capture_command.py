"""The detached capture a hook starts when no owner is running: open the workspace (owning it,
or through the owner that appeared meanwhile), capture one session, close. Its output goes to
.flowbaby/logs/capture.log; it never runs in the client's foreground."""

from __future__ import annotations

import asyncio
import json
import sys


async def capture(workspace: str, params: dict[str, object]) -> int:
    from flowbaby.owner_line import call_json
    from graph.api import open_service
    from graph.core.contract import FlowbabyError

    service = await open_service("capture", workspace)
    if isinstance(service, FlowbabyError):
        return 3
    try:
        print(json.dumps(await call_json(service, "capture", params)), flush=True)
    finally:
        await service.close(5.0, hand_on=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(capture(sys.argv[1], json.loads(sys.argv[2]))))
