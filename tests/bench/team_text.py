"""Lexical search on the team backend against the in-memory BM25 lane, on the same memories.

For the Pawpoint dev set (tests/support/fixtures/devmem_pawpoint.json) and the LoCoMo dev half
(/work/shared/bench/locomo-dev.json, one namespace per conversation): the lexical lane alone
(R@5 and MRR of its own ranking) and the fused ranking (all lanes; the same LanceDB vectors and
projection for every lexical variant, so only the lexical lane differs). Variants: the in-memory
index; Postgres' BM25 over the tsvector with the shipped word rules (letters and digits, `english`);
with other text-search configurations (swapped into a scratch namespace's lexical_vector); and
ts_rank_cd instead of BM25. Also the warm-up cost of each backend at a few thousand memories.

    .venv/bin/python -m tests.bench.team_text [--locomo PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from graph.backends.embedded.projection import FileProjection
from graph.backends.embedded.vectors import VectorIndex
from graph.backends.lexical import LexicalSearch
from graph.backends.team.lexical import PgLexicalIndex
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.core.lexical import LexicalIndex
from graph.core.memories import Memory, new_operation_id
from graph.core.workspace import resolve_workspace
from graph.search.catalog import Catalog
from graph.search.graph_lane import GraphLane
from graph.search.retrieval import Retriever
from tests.bench.devset import load_devset, rank_topics, score, to_memory
from tests.bench.latency import _cognee_shaped
from tests.bench.locomo import load_conversations, session_recall
from tests.support.postgres import database_url

WORDS = "regexp_replace(body, '[^[:alnum:]]+', ' ', 'g')"
SHIPPED = f"to_tsvector('pg_catalog.english'::regconfig, {WORDS})"
CONFIGS = {
    "english, letters+digits (shipped)": SHIPPED,
    "simple, letters+digits": f"to_tsvector('pg_catalog.simple'::regconfig, {WORDS})",
    "english, Postgres parser": "to_tsvector('pg_catalog.english'::regconfig, body)",
    "simple, Postgres parser": "to_tsvector('pg_catalog.simple'::regconfig, body)",
    "english || simple, letters+digits": f"{SHIPPED} || to_tsvector('pg_catalog.simple'::regconfig, {WORDS})",
}


class TsRankCd(PgLexicalIndex):
    """ts_rank_cd over an OR of the query's words, normalised rank/(rank+1) (flag 32)."""

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        rows = self._rows(
            "WITH q AS (SELECT string_agg('''' || lexeme || '''', ' | ')::tsquery AS q "
            "FROM unnest(lexical_vector(%(query)s))) "
            "SELECT memory_id, ts_rank_cd(lexemes, (SELECT q FROM q), 32) AS score FROM memory_lexemes "
            "WHERE lexemes @@ (SELECT q FROM q) ORDER BY score DESC, memory_id LIMIT %(limit)s",
            {"query": query, "limit": limit},
        )
        return {row["memory_id"]: float(row["score"]) for row in rows}


class TsvectorBm25(PgLexicalIndex):
    """The same BM25, its counts read by unnesting every matching memory's tsvector (no postings)."""

    def search(self, query: str, limit: int | None = None) -> dict[str, float]:
        rows = self._rows(
            """
            WITH totals AS MATERIALIZED (
                SELECT count(*)::float8 AS n, coalesce(avg(length), 1)::float8 AS average FROM memory_lexemes),
            terms AS MATERIALIZED (
                SELECT q.lexeme, array_length(q.positions, 1)::float8 AS qtf,
                    ln(1 + (totals.n - d.df + 0.5) / (d.df + 0.5)) AS idf
                FROM unnest(lexical_vector(%(query)s)) AS q, totals, LATERAL (SELECT count(*)::float8 AS df
                    FROM memory_lexemes m WHERE m.lexemes @@ ('''' || q.lexeme || '''')::tsquery) AS d
                WHERE d.df > 0),
            reach AS (SELECT sum(qtf * idf * 2.2) AS a, string_agg('''' || lexeme || '''', ' | ')::tsquery AS q
                FROM terms)
            SELECT m.memory_id, sum(terms.qtf * terms.idf * w.tf * 2.2
                / (w.tf + 1.2 * (0.25 + 0.75 * m.length / totals.average))) / (SELECT a FROM reach) AS score
            FROM memory_lexemes m
            CROSS JOIN LATERAL (SELECT lexeme, array_length(positions, 1)::float8 AS tf FROM unnest(m.lexemes)) w
            JOIN terms ON terms.lexeme = w.lexeme CROSS JOIN totals
            WHERE m.lexemes @@ (SELECT q FROM reach)
            GROUP BY m.memory_id ORDER BY score DESC, m.memory_id LIMIT %(limit)s
            """,
            {"query": query, "limit": limit},
        )
        return {row["memory_id"]: float(row["score"]) for row in rows}


def stage(url: str, namespace: str, requests: list[dict[str, Any]]) -> list[Memory]:
    store = PostgresMemoryStore(url, namespace, owner=False)
    for request in requests:
        operation = new_operation_id()
        store.stage(to_memory(request), operation)
    memories = list(store.iter_memories())
    store.close()
    return memories


def set_config(lexical: PgLexicalIndex, expression: str) -> None:
    """Swap the scratch namespace's word rules and let the trigger re-index every memory."""
    conn = lexical._conn
    conn.execute(
        f"CREATE OR REPLACE FUNCTION lexical_vector(body TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE "
        f"RETURN {expression}".encode()
    )
    conn.execute("UPDATE memories SET topic = topic")


def lane_ranks(lexical: LexicalSearch, memories: list[Memory], queries: list[str]) -> list[list[str]]:
    topic = {m.memory_id: m.topic_id for m in memories}
    ranked = []
    for query in queries:
        found = lexical.search(query, 50)
        ids = sorted(found, key=lambda m: -found[m])
        ranked.append(list(dict.fromkeys(topic[m] for m in ids))[:10])
    return ranked


def recall_mrr(ranked: list[list[str]], answers: list[list[str]]) -> dict[str, float]:
    r5 = [sum(a in r[:5] for a in ans) / len(ans) for r, ans in zip(ranked, answers, strict=True)]
    rr = [next((1 / (i + 1) for i, t in enumerate(r) if t in ans), 0.0) for r, ans in zip(ranked, answers, strict=True)]
    return {"R@5": round(100 * statistics.mean(r5), 1), "MRR": round(statistics.mean(rr), 3)}


def variants(url: str, namespace: str) -> dict[str, LexicalSearch]:
    return {"in-memory BM25": LexicalIndex(), **{name: PgLexicalIndex(url, namespace) for name in CONFIGS}} | {
        "ts_rank_cd (shipped words)": TsRankCd(url, namespace)
    }


def evaluate(
    url: str, requests: list[dict[str, Any]], queries: list[str], root: Path, embedder: Any
) -> tuple[dict[str, list[list[str]]], dict[str, list[list[str]]]]:
    """(lexical lane alone, fused) topic rankings per variant."""
    namespace = f"b{uuid.uuid4().hex[:12]}"
    memories = stage(url, namespace, requests)
    root.mkdir(parents=True, exist_ok=True)
    paths = resolve_workspace(root)
    index = VectorIndex(paths.vectors, embedder)
    index.add_memories(memories)
    from graph.core.graph_projection import build_projection, save_projection

    nodes, edges = _cognee_shaped(memories)
    save_projection(build_projection(nodes, edges, memories), paths.projection)
    lane: dict[str, list[list[str]]] = {}
    fused: dict[str, list[list[str]]] = {}
    for name, lexical in variants(url, namespace).items():
        if name in CONFIGS:
            set_config(lexical, CONFIGS[name])  # type: ignore[arg-type]
        elif isinstance(lexical, PgLexicalIndex):
            set_config(lexical, SHIPPED)
        retriever = Retriever(
            Catalog(memories, lexical), embedder, GraphLane(FileProjection(paths.projection)), lambda: index
        )
        lane[name] = lane_ranks(lexical, memories, queries)
        fused[name] = [rank_topics(retriever, q) for q in queries]
    return lane, fused


def warm_up(url: str, n: int) -> dict[str, float]:
    """Seconds to open the lexical lane over n staged memories: the in-memory index built from every
    memory, against opening the Postgres one (the database already holds it); then the Catalog as the
    service builds it with each (it also builds the name links), medians of 3; and search latency."""
    import random

    from tests.bench.ingest import synthetic_summary

    rng = random.Random(7)
    requests = [synthetic_summary(i, rng) for i in range(n)]
    namespace = f"w{uuid.uuid4().hex[:12]}"
    began = time.perf_counter()
    memories = stage(url, namespace, requests)
    staged = time.perf_counter() - began
    texts = [(m.memory_id, " ".join(t for _, items in m.sections() for t in items)) for m in memories]
    times: dict[str, list[float]] = {
        k: [] for k in ("in-memory build", "postgres open", "catalog in-memory", "catalog postgres")
    }
    for _ in range(3):
        began = time.perf_counter()
        reference = LexicalIndex()
        for memory_id, text in texts:
            reference.add(memory_id, text)
        times["in-memory build"].append(time.perf_counter() - began)
        began = time.perf_counter()
        PgLexicalIndex(url, namespace).close()
        times["postgres open"].append(time.perf_counter() - began)
        began = time.perf_counter()
        Catalog(memories)
        times["catalog in-memory"].append(time.perf_counter() - began)
        began = time.perf_counter()
        lexical = PgLexicalIndex(url, namespace)
        Catalog(memories, lexical)
        times["catalog postgres"].append(time.perf_counter() - began)
        lexical.close()
    lanes = {
        "in-memory": reference,
        "postgres": PgLexicalIndex(url, namespace),
        "postgres, no postings": TsvectorBm25(url, namespace),
    }
    queries = [r["topic"] + " " + r["context"][:60] for r in requests[:: max(1, n // 40)]]
    search: dict[str, list[float]] = {name: [] for name in lanes}
    for q in queries:
        for name, index in lanes.items():
            began = time.perf_counter()
            index.search(q, 300)
            search[name].append(time.perf_counter() - began)
    out: dict[str, float] = {"memories": n, "staging s": round(staged, 1)}
    out |= {f"{k} s": round(statistics.median(v), 3) for k, v in times.items()}
    out |= {f"search {k} p50 ms": round(1000 * statistics.median(v), 2) for k, v in search.items()}
    out |= {f"search {k} p95 ms": round(1000 * sorted(v)[int(0.95 * (len(v) - 1))], 2) for k, v in search.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", type=Path, default=Path("/work/shared/bench/locomo-dev.json"))
    parser.add_argument("--url", default="")
    parser.add_argument("--warm", type=int, nargs="*", default=[2000])
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from graph.core.settings import default_model_path
    from graph.search.embedder import Embedder

    embedder = Embedder(default_model_path())
    report: dict[str, Any] = {}
    with database_url(args.url) as url:
        if not args.skip_quality:
            with tempfile.TemporaryDirectory() as tmp:
                requests, questions = load_devset()
                asked = [q["question"] for q in questions]
                lane, fused = evaluate(url, requests, asked, Path(tmp) / "devset", embedder)
                answerable = [i for i, q in enumerate(questions) if q["kind"] != "unanswerable"]
                answers = [
                    questions[i]["answers"] if "answers" in questions[i] else [questions[i]["newer"]]
                    for i in answerable
                ]
                report["devset"] = {
                    name: {
                        "lexical lane": recall_mrr([lane[name][i] for i in answerable], answers),
                        "fused": score(questions, fused[name])
                        | recall_mrr([fused[name][i] for i in answerable], answers),
                    }
                    for name in lane
                }
                print(json.dumps(report, indent=1), flush=True)
                if args.locomo.is_file():
                    lanes: dict[str, list[list[str]]] = {}
                    fuseds: dict[str, list[list[str]]] = {}
                    all_questions: list[dict[str, Any]] = []
                    for conversation in load_conversations(args.locomo):
                        qs = conversation["questions"]
                        lane, fused = evaluate(
                            url,
                            conversation["requests"],
                            [q["question"] for q in qs],
                            Path(tmp) / conversation["sample"],
                            embedder,
                        )
                        for name in lane:
                            lanes.setdefault(name, []).extend(lane[name])
                            fuseds.setdefault(name, []).extend(fused[name])
                        all_questions += qs
                    answers = [q["evidence"] for q in all_questions]
                    report["locomo"] = {
                        name: {
                            "lexical lane": {
                                k: v
                                for k, v in session_recall(lanes[name], all_questions).items()
                                if k in ("R@1", "R@5", "multi-hop R@5")
                            }
                            | {"MRR": recall_mrr(lanes[name], answers)["MRR"]},
                            "fused": {
                                k: v
                                for k, v in session_recall(fuseds[name], all_questions).items()
                                if k in ("R@1", "R@5", "multi-hop R@5")
                            }
                            | {"MRR": recall_mrr(fuseds[name], answers)["MRR"]},
                        }
                        for name in lanes
                    }
                    print(json.dumps(report["locomo"], indent=1), flush=True)
        report["warm_up"] = [warm_up(url, n) for n in args.warm]
        print(json.dumps(report["warm_up"], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
