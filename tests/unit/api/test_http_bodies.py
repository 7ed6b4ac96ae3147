"""A route with a response model writes its body with json.dumps, byte for byte as the bridge
does: FastAPI's pydantic fast path would print 4.5e-05 as 0.000045."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from api.app import create_app

HEALTH: dict[str, Any] = {
    "success": True,
    "status": "ready",
    "version": "0.1.0",
    "workspace": "/tmp/café",
    "pid": 7,
    "embedderLoaded": True,
    "workerPid": None,
    "llm": "offline-extractor",
    "memories": 0,
    "pendingOperations": 0,
    "uptimeSec": 4.5e-05,
    "llmSource": "default",
    "graphBuilding": True,
    "hookProblems": {"current": False, "problems": []},
}


class _HealthOnly:
    async def health(self) -> dict[str, Any]:
        return HEALTH


def test_response_model_bodies_are_written_like_the_bridge_writes_them() -> None:
    async def get() -> httpx.Response:
        app = create_app(_HealthOnly(), "token")  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get("/api/health", headers={"Authorization": "Bearer token"})

    response = asyncio.run(get())
    assert response.status_code == 200
    assert response.content == json.dumps(HEALTH, ensure_ascii=False, separators=(",", ":")).encode()
