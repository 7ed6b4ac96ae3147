"""Another server's changes reach this server's caches (graph.backends.team.change_feed): a
`forgotten` notification hands the versions to the service, which drops them from its catalog."""

from __future__ import annotations

import asyncio
from typing import Any

from flowbaby.owner_line import call_json
from graph.backends.backend import ServerCaches
from graph.backends.team.change_feed import RemoteChanges
from tests.conftest import summary
from tests.unit.engine.test_hardening import run, service  # noqa: F401 (fixture)


def test_a_forget_on_another_server_reaches_this_servers_catalog() -> None:
    forgotten: list[list[str]] = []

    async def scenario() -> None:
        changes = RemoteChanges(
            ServerCaches(
                asyncio.get_running_loop(),
                store=None,  # type: ignore[arg-type]
                retriever=lambda: None,
                vectors=lambda: None,
                wake_operations=lambda: None,
                forget=forgotten.append,
            )
        )
        changes.handle("forgotten", ["m1", "m2"], {"kind": "forgotten", "ids": ["m1", "m2"]})
        changes.handle("queued", ["op"], {})
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert forgotten == [["m1", "m2"]]


def test_the_service_rebuilds_its_catalog_without_what_another_server_forgot(service: Any) -> None:  # noqa: F811
    """The store no longer holds the versions (the other server deleted them): the rebuilt catalog
    leaves them out, and so does every later rebuild."""

    async def scenario() -> None:
        kept = await call_json(service, "ingest", summary("kept-topic"))
        gone = await call_json(service, "ingest", summary("gone-topic"))
        service._warm_task = asyncio.create_task(service._warm_up())
        service._embed_task = asyncio.create_task(service._embed_loop())
        await service.vectors()
        await service._embed_queue.join()
        gone_id = gone["ingestion_metrics"]["memoryId"]
        assert gone_id in service._retriever.catalog.by_id
        service.store.forget("fg_other", [gone_id])  # what the other server's forget did to the rows
        service._forgotten_elsewhere([gone_id])
        await asyncio.gather(*service._rebuilds)
        assert gone_id not in service._retriever.catalog.by_id
        assert kept["ingestion_metrics"]["memoryId"] in service._retriever.catalog.by_id
        for task in (service._embed_task, service._warm_task):
            task.cancel()

    run(scenario)
