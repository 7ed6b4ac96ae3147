"""Where one retrieval's time goes, in this process, on a workspace built by the latency bench:

  python -m tests.bench.steps WORKSPACE [--queries 200] [--rounds 3] [--team]
  python -m tests.bench.steps FOLDER --url POSTGRES_URL --namespace NAME   (a namespace already loaded)

`--team`: the same memories, vectors and projection COPYed into a namespace of a throwaway Postgres (as
`tests/bench/team_scale.py` loads one; the workspace is rebuilt from the latency corpus at its size), and
the retriever built on the team backend's stores, so its lexical lane and chunk search go to Postgres.
`--url`/`--namespace`: a team namespace that is already loaded (the 1M bench's, kept), served from FOLDER.

The engine's parts are loaded as warm-up loads them, then a timer is wrapped around each step of
`Retriever.retrieve` (the query embedding, the chunk search, each lane, the graph's second hop, the final
scores, the vector-pick interleaving) and the median and p95 of each round are printed. The timers add a few
microseconds per step; the steps nest (the vector lane holds the embedding and the search; the second
hop holds the expansion), so they do not add up to the whole.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.bench.latency import queries

if TYPE_CHECKING:
    from graph.search.retrieval import Retriever


def _timed(samples: dict[str, list[float]], owner: object, method: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, method)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            samples[label].append((time.perf_counter() - started) * 1000)

    setattr(owner, method, timed)


def steps(
    root: Path, count: int, rounds: int, team: bool = False, loaded: tuple[str, str] | None = None
) -> list[dict[str, list[float]]]:
    from graph.backends.backend import backend_for
    from graph.core.contract import FlowbabyContextRequest
    from graph.core.settings import default_model_path
    from graph.core.workspace import resolve_workspace
    from graph.search.catalog import Catalog
    from graph.search.embedder import Embedder
    from graph.search.graph_lane import GraphLane
    from graph.search.retrieval import Retriever

    embedder = Embedder(default_model_path())
    embedder.load()
    with contextlib.ExitStack() as cleanup:
        if loaded:
            backend = backend_for(resolve_workspace(root), *loaded)
        elif team:
            backend = _team_backend(root, embedder, cleanup)
        else:
            backend = backend_for(resolve_workspace(root))
        store = backend.memory_store(owner=False)
        cleanup.callback(store.close)
        index, _ = backend.vectors(embedder, None)
        cleanup.callback(index.close)
        indexed = index.indexed_memory_ids()
        catalog = Catalog([m for m in store.iter_memories() if m.memory_id in indexed], backend.lexical(), None)
        lane = GraphLane(backend.projection())
        lane.refresh()
        retriever = Retriever(catalog, embedder, lane, lambda: index)
        retriever.supersession_pairs(False)
        gc.freeze()  # as warm-up does
        samples = _timers(retriever)
        asked = queries(count, random.Random(5))
        out = []
        for _ in range(rounds):
            samples.clear()
            for query in asked:
                retriever.retrieve(FlowbabyContextRequest(query=query, maxResults=5))
            out.append(
                {
                    label: [round(statistics.median(values), 2), round(statistics.quantiles(values, n=20)[-1], 2)]
                    for label, values in samples.items()
                    if len(values) > 1
                }
            )
        return out


def _team_backend(root: Path, embedder: Any, cleanup: contextlib.ExitStack) -> Any:
    """A throwaway Postgres holding the latency corpus at the workspace's size, as team_scale loads it."""
    import tempfile

    from graph.backends.backend import backend_for
    from graph.backends.embedded.memory_store import MemoryStore
    from graph.core.workspace import resolve_workspace
    from tests.bench.latency import build_workspace
    from tests.bench.team_scale import load_namespace
    from tests.support.postgres import PostgresServer

    counted = MemoryStore(resolve_workspace(root).store_db)
    size = counted.counts()["memories"]
    counted.close()
    scratch = Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
    (scratch / "embedded").mkdir()
    (scratch / "team").mkdir()
    cache: dict[str, list[float]] = {}
    _, (memories, _, _) = build_workspace(scratch / "embedded", size, embedder, cache)
    server = PostgresServer.start(durable=True)
    cleanup.callback(server.stop)
    projection = resolve_workspace(scratch / "embedded").projection
    load_namespace(server.url(), "steps", memories, cache, projection)
    return backend_for(resolve_workspace(scratch / "team"), server.url(), "steps")


def _timers(retriever: Retriever) -> dict[str, list[float]]:
    """A timer around each step of the retriever's search; the milliseconds it records, by step."""
    samples: dict[str, list[float]] = defaultdict(list)
    for owner, method, label in (
        (retriever.embedder, "encode", "query embedding"),
        (retriever._vectors(), "search", "chunk search"),
        (retriever, "_vector_lane", "vector lane (embedding and search included)"),
        (retriever.catalog.lexical, "search", "lexical lane"),
        (retriever.graph, "query_entities", "query entities"),
        (retriever.graph, "seed", "graph seed"),
        (retriever.graph, "expand", "graph expansion"),
        (retriever, "_second_hop", "second hop (expansion included)"),
        (retriever, "_final_scores", "final scores"),
        (retriever, "_interleave_vector_picks", "vector-pick interleaving"),
        (retriever, "_unknown_names", "abstention: names no memory holds"),
        (retriever.catalog.lexical, "known_share", "abstention: share of known words"),
        (retriever, "rank", "rank"),
        (retriever, "retrieve", "retrieve"),
    ):
        _timed(samples, owner, method, label)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.steps")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--team", action="store_true")
    parser.add_argument("--url", help="a team database whose namespace is already loaded")
    parser.add_argument("--namespace")
    args = parser.parse_args()
    if bool(args.url) != bool(args.namespace):
        parser.error("--url and --namespace go together")
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        json.dumps(
            {
                "load_before": load,
                "median_and_p95_ms_per_round": steps(
                    args.workspace,
                    args.queries,
                    args.rounds,
                    args.team,
                    (args.url, args.namespace) if args.url else None,
                ),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
