"""cognee's own CHUNKS search over a flowbaby workspace, for the LoCoMo comparison.

Runs as a child process (cognee reads its configuration once per process):
`python -m tests.bench.cognee_search WORKSPACE QUERIES.json` prints one JSON line,
the ranked topicIds per query (sessions deduplicated from chunk hits).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any


def _document_id(hit: Any) -> str | None:
    payload = hit if isinstance(hit, dict) else getattr(hit, "payload", None) or getattr(hit, "__dict__", {})
    for key in ("document_id", "documentId"):
        if payload.get(key):
            return str(payload[key])
    return None


async def main(workspace: str, query_file: str) -> None:
    from graph.backends.backend import open_backend
    from graph.backends.embedded.memory_store import MemoryStore
    from graph.cognify.worker import cognee_runtime as runtime
    from graph.core.settings import load_settings
    from graph.core.workspace import resolve_workspace
    from graph.search.embedder import Embedder

    paths = resolve_workspace(workspace)
    settings = load_settings(paths)
    runtime.configure_environment(paths, settings, open_backend(paths))
    import cognee
    from cognee.modules.search.types import SearchType

    runtime.install_embedding_engine(Embedder(settings.embedding_model))
    runtime.install_offline_llm()
    store = MemoryStore(paths.store_db)
    topic_of = {m.memory_id: m.topic_id for m in store.iter_memories()}
    ranked = []
    for query in json.loads(Path(query_file).read_text()):
        hits = await cognee.search(query_text=query, query_type=SearchType.CHUNKS, top_k=60, datasets=[runtime.DATASET])
        topics: list[str] = []
        for hit in hits:
            for item in hit.get("search_result") if isinstance(hit, dict) and "search_result" in hit else [hit]:
                for chunk in item if isinstance(item, list) else [item]:
                    topic = topic_of.get(_document_id(chunk) or "")
                    if topic and topic not in topics:
                        topics.append(topic)
        ranked.append(topics[:10])
    print(json.dumps(ranked), flush=True)


if __name__ == "__main__":
    import os

    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = protocol
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    protocol.flush()
    os._exit(0)
