"""Where one retrieval's time goes, in this process, on a workspace built by the latency bench:

  python -m tests.bench.steps WORKSPACE [--queries 200] [--rounds 3]

The engine's parts are loaded as warm-up loads them, then a timer is wrapped around each step of
`Retriever.retrieve` (the query embedding, the chunk search, each lane, the graph's second hop, the final
scores, the vector-pick interleaving) and the medians of each round are printed. The timers add a few
microseconds per step; the steps nest (the vector lane holds the embedding and the search; the second
hop holds the expansion), so they do not add up to the whole.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench.latency import queries


def _timed(samples: dict[str, list[float]], owner: object, method: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, method)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            samples[label].append((time.perf_counter() - started) * 1000)

    setattr(owner, method, timed)


def steps(root: Path, count: int, rounds: int) -> list[dict[str, float]]:
    from graph.backends.embedded.memory_store import MemoryStore
    from graph.backends.embedded.projection import FileProjection
    from graph.backends.embedded.vectors import open_vector_index
    from graph.core.contract import FlowbabyContextRequest
    from graph.core.settings import default_model_path
    from graph.core.workspace import resolve_workspace
    from graph.search.embedder import Embedder
    from graph.search.graph_lane import GraphLane
    from graph.search.lexical import LexicalIndex
    from graph.search.retrieval import Catalog, Retriever

    paths = resolve_workspace(root)
    embedder = Embedder(default_model_path())
    embedder.load()
    index, _ = open_vector_index(paths.vectors, embedder, None)
    store = MemoryStore(paths.store_db)
    indexed = index.indexed_memory_ids()
    catalog = Catalog([m for m in store.iter_memories() if m.memory_id in indexed], LexicalIndex(), None)
    lane = GraphLane(FileProjection(paths.projection))
    lane.refresh()
    retriever = Retriever(catalog, embedder, lane, lambda: index)
    retriever.supersession_pairs(False)
    gc.freeze()  # as warm-up does
    samples: dict[str, list[float]] = defaultdict(list)
    for owner, method, label in (
        (embedder, "encode", "query embedding"),
        (index, "search", "chunk search"),
        (retriever, "_vector_lane", "vector lane (embedding and search included)"),
        (catalog.lexical, "search", "lexical lane"),
        (lane, "query_entities", "query entities"),
        (lane, "seed", "graph seed"),
        (lane, "expand", "graph expansion"),
        (retriever, "_second_hop", "second hop (expansion included)"),
        (retriever, "_final_scores", "final scores"),
        (retriever, "_interleave_vector_picks", "vector-pick interleaving"),
        (retriever, "rank", "rank"),
        (retriever, "retrieve", "retrieve"),
    ):
        _timed(samples, owner, method, label)
    asked = queries(count, random.Random(5))
    out = []
    try:
        for _ in range(rounds):
            samples.clear()
            for query in asked:
                retriever.retrieve(FlowbabyContextRequest(query=query, maxResults=5))
            out.append({label: round(statistics.median(values), 2) for label, values in samples.items()})
    finally:
        index.close()
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.steps")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        json.dumps(
            {"load_before": load, "median_ms_per_round": steps(args.workspace, args.queries, args.rounds)}, indent=1
        )
    )


if __name__ == "__main__":
    main()
