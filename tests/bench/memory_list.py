"""listMemories at 100k memories: a page's time through the store, on SQLite and (when a Postgres
server is given) the team backend. `python -m tests.bench.memory_list [--postgres]`.

Rows are inserted straight into the store's table (staging 100k through the service would embed
them: that is not what is measured); each page is timed 20 times, the median and worst reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.memory_store import MemoryStoreBackend
from graph.core.contract import MemoryFilter, MemoryStatus
from graph.core.memories import Memory, insert_memory_sql, memory_uuid, memory_values
from graph.core.memory_query import Page
from tests.support.fakes import memory

COUNT = 100_000
AGENTS = ("architect", "reviewer", "planner", "rare-agent")
REPEATS = 20


def rows(count: int) -> list[Memory]:
    """count versions over count*0.9 topics (a tenth are second versions), four agents (one rare)."""
    out: list[Memory] = []
    for i in range(count):
        topic = f"topic-{i % int(count * 0.9):06d}"
        version = 1 if i < int(count * 0.9) else 2
        agent = AGENTS[3] if i % 1000 == 0 else AGENTS[i % 3]
        stamp = f"2026-01-01T{i // 3_600_000 % 24:02d}:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z"
        out.append(
            memory(
                memory_uuid(topic, version),
                topic_id=topic,
                version=version,
                status=MemoryStatus.DECISION_RECORD if i % 7 == 0 else MemoryStatus.ACTIVE,
                topic=f"Summary {i}",
                context=f"Context of memory {i} about subsystem {i % 97} and its cache",
                decisions=[f"Decision {i}"],
                created=stamp,
                agent_name=agent,
                staged_at=stamp,
                char_count=80,
            )
        )
    return out


QUERIES: dict[str, MemoryFilter] = {
    "newest page": MemoryFilter(),
    "all versions": MemoryFilter(allVersions=True),
    "status DecisionRecord": MemoryFilter(status=[MemoryStatus.DECISION_RECORD]),
    "agent (1 in 3)": MemoryFilter(agentName="reviewer"),
    "rare agent (1 in 1000)": MemoryFilter(agentName="rare-agent"),
    "topicId prefix": MemoryFilter(topicIdPrefix="topic-0123"),
    "created range": MemoryFilter(createdAfter="2026-01-01T00:00:10.000Z", createdBefore="2026-01-01T00:00:40.000Z"),
    "text (common)": MemoryFilter(text="subsystem 42 "),
    "text (rare)": MemoryFilter(text="memory 99999 "),
}


def time_pages(store: MemoryStoreBackend, limit: int = 50) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, query in QUERIES.items():
        for label, after in (("first", None), ("deep", ("2026-01-01T00:01:00.000Z", ""))):
            samples = []
            got = 0
            for _ in range(REPEATS):
                started = time.perf_counter()
                got = len(store.list_page(query, Page(limit, True, after))[:limit])
                samples.append((time.perf_counter() - started) * 1000)
            results[f"{name} / {label}"] = {
                "medianMs": round(statistics.median(samples), 2),
                "maxMs": round(max(samples), 2),
                "rows": got,
            }
    return results


def fill_sqlite(path: Path, memories: list[Memory]) -> MemoryStore:
    store = MemoryStore(path)
    conn = store._conn
    conn.execute("BEGIN")
    conn.executemany(insert_memory_sql("?"), [memory_values(m, None) for m in memories])
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    return store


def run(postgres_url: Callable[[], str] | None = None) -> dict[str, Any]:
    memories = rows(COUNT)
    report: dict[str, Any] = {"memories": COUNT, "pageSize": 50}
    with tempfile.TemporaryDirectory() as root:
        store = fill_sqlite(Path(root) / "store.db", memories)
        report["sqlite"] = time_pages(store)
        store.close()
    if postgres_url is not None:
        from graph.backends.team.memory_store import PostgresMemoryStore

        pg = PostgresMemoryStore(postgres_url(), "listbench")
        with pg._cursor(transaction=True) as cur:
            cur.executemany(insert_memory_sql("%s"), [memory_values(m, None) for m in memories])
        with pg._cursor() as cur:
            cur.execute("ANALYZE memories")
        report["postgres"] = time_pages(pg)
        pg.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", action="store_true", help="also on a Postgres server started for it")
    args = parser.parse_args()
    if not args.postgres:
        print(json.dumps(run(), indent=2))
        return
    from tests.support.postgres import PostgresServer

    server = PostgresServer.start()
    try:
        print(json.dumps(run(server.url), indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
