"""LoCoMo session recall, mapped exactly as ../shared/bench/README.md says, through the bridge.

One workspace per conversation, one ingestForAgent per session, waiting for the
background graph, then one retrieveForAgent per question (k = 10, default half-life).
In the same run: the README's BM25, MiniLM and RRF baselines on the same memories,
cognee's own CHUNKS search over the same workspace, and lane ablations of ours.
The data is CC BY-NC 4.0 and is read from shared/, never copied into the package.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bridge.client import BridgeClient
from flowbaby.owner_line import call_json

KS = (1, 3, 5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo-dev.json"


def _iso(text: str) -> str:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_conversations(path: Path) -> list[dict[str, Any]]:
    """Each conversation as ingest requests (one per session) and scored questions."""
    conversations = []
    for raw in json.loads(path.read_text()):
        sample, talk = raw["sample_id"], raw["conversation"]
        a, b = talk["speaker_a"], talk["speaker_b"]
        numbers = sorted(int(re.match(r"session_(\d+)_summary", k).group(1)) for k in raw["session_summary"])
        requests = []
        for n in numbers:
            observation = raw["observation"][f"session_{n}_observation"]
            stamp = _iso(talk[f"session_{n}_date_time"])
            requests.append(
                {
                    "topic": f"Session {n}: {a} and {b}",
                    "context": raw["session_summary"][f"session_{n}_summary"],
                    "decisions": [fact[0] for speaker in observation for fact in observation[speaker]],
                    "metadata": {
                        "topicId": f"{sample}-s{n}",
                        "sessionId": sample,
                        "status": "Active",
                        "createdAt": stamp,
                        "updatedAt": stamp,
                    },
                }
            )
        questions = []
        for qa in raw["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            sessions = [int(m.group(1)) for e in qa.get("evidence", []) if (m := _EVIDENCE.fullmatch(e))]
            evidence = [f"{sample}-s{s}" for s in sessions if s in numbers]
            if evidence:
                questions.append({"question": qa["question"], "category": qa["category"], "evidence": evidence})
        conversations.append({"sample": sample, "requests": requests, "questions": questions})
    return conversations


def session_recall(ranked: list[list[str]], questions: list[dict[str, Any]]) -> dict[str, float]:
    """The paper's metric: share of evidence ids whose session is in the top k, averaged."""
    result: dict[str, float] = {}
    for k in KS:
        per_question = [
            sum(e in set(r[:k]) for e in q["evidence"]) / len(q["evidence"])
            for r, q in zip(ranked, questions, strict=False)
        ]
        result[f"R@{k}"] = round(100 * float(np.mean(per_question)), 1)
        for category, name in CATEGORIES.items():
            values = [v for v, q in zip(per_question, questions, strict=False) if q["category"] == category]
            result[f"{name} R@{k}"] = round(100 * float(np.mean(values)), 1) if values else float("nan")
    return result


# -- baselines, as the README defines them ----------------------------------------------
def _bm25_rank(requests: list[dict[str, Any]], queries: list[str]) -> list[list[str]]:
    tokenize = lambda text: re.findall(r"\w+", text.lower())  # noqa: E731
    docs = [tokenize(" ".join([r["topic"], r["context"], *r["decisions"]])) for r in requests]
    df = Counter(t for d in docs for t in set(d))
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    ids = [r["metadata"]["topicId"] for r in requests]
    ranked = []
    for query in queries:
        scores = []
        for doc in docs:
            tf = Counter(doc)
            score = 0.0
            for term in tokenize(query):
                if term in tf:
                    idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    score += idf * tf[term] * 2.2 / (tf[term] + 1.2 * (0.25 + 0.75 * len(doc) / avg))
            scores.append(score)
        ranked.append([ids[i] for i in np.argsort(-np.array(scores), kind="stable")])
    return ranked


def maxsim_rank(
    requests: list[dict[str, Any]], queries: list[str], passages: Any, questions: Any = None
) -> list[list[str]]:
    """The README's MiniLM baseline: each memory ranked by its best sentence's cosine to the
    question. `questions` encodes the queries when the model has its own query encoder (default:
    `passages`)."""
    from graph.core.memory_chunks import split_sentences

    owners, texts = [], []
    for index, r in enumerate(requests):
        for text in [r["topic"], r["context"], *r["decisions"]]:
            for sentence in split_sentences(text):
                owners.append(index)
                texts.append(sentence)
    chunks = np.asarray(passages.encode(texts), dtype=np.float32)
    query_vectors = np.asarray((questions or passages).encode(queries), dtype=np.float32)
    owners_array = np.asarray(owners)
    ids = [r["metadata"]["topicId"] for r in requests]
    ranked = []
    for sims in query_vectors @ chunks.T:
        best = np.full(len(requests), -1.0)
        np.maximum.at(best, owners_array, sims)
        ranked.append([ids[i] for i in np.argsort(-best, kind="stable")])
    return ranked


def _rrf(*rankings: list[list[str]], k: int = 60) -> list[list[str]]:
    fused = []
    for per_query in zip(*rankings, strict=False):
        scores: dict[str, float] = defaultdict(float)
        for ranking in per_query:
            for position, topic in enumerate(ranking):
                scores[topic] += 1 / (k + 1 + position)
        fused.append(sorted(scores, key=lambda t: -scores[t]))
    return fused


# -- the service ----------------------------------------------------------------------
def _ingest_through_bridge(workspace: Path, requests: list[dict[str, Any]]) -> dict[str, Any]:
    # cognee keeps its own vectors here, for the cognee CHUNKS baseline (flowbaby never reads them)
    env = {**os.environ, "FLOWBABY_MAX_RUNNING": "50", "FLOWBABY_MAX_QUEUED": "1000", "FLOWBABY_COGNEE_VECTORS": "1"}
    client = BridgeClient(workspace, env=env, extra_args=["--rate-limit-per-minute", "0"])
    started = time.perf_counter()
    for request in requests:
        reply = client.result("ingestForAgent", request)
        assert reply["success"], reply
    staged = time.perf_counter() - started
    status = client.wait_idle(3600, poll=0.5)
    built = time.perf_counter() - started
    return {
        "client": client,
        "stagingSec": round(staged, 2),
        "graphSec": round(built, 2),
        "failed": status["counts"].get("failed", 0),
    }


def _retrieve_through_bridge(
    client: BridgeClient, questions: list[dict[str, Any]]
) -> tuple[list[list[str]], list[float]]:
    ranked, latencies = [], []
    for q in questions:
        started = time.perf_counter()
        reply = client.result(
            "retrieveForAgent",
            {"query": q["question"], "maxResults": 10, "maxTokens": 100000, "includeSuperseded": True},
        )
        latencies.append((time.perf_counter() - started) * 1000)
        assert reply["success"], reply
        ranked.append([e["topicId"] for e in reply["entries"]])
    return ranked, latencies


async def _ablations(workspace: Path, questions: list[dict[str, Any]]) -> dict[str, list[list[str]]]:
    """Our own lanes alone and fused without the graph, on the same workspace, in-process."""
    from graph.engine.service import FlowbabyService

    service = await FlowbabyService.open(workspace, log_to_stderr=False, rate_limit_per_minute=0)
    variants = {
        "vector lane": {"vector"},
        "lexical lane": {"lexical"},
        "graph lane": {"graph"},
        "fusion without graph": {"vector", "lexical"},
        "all lanes, abstain off": {"vector", "lexical", "graph"},
    }
    try:
        out = {}
        for name, lanes in variants.items():
            out[name] = []
            for q in questions:
                params = {"query": q["question"], "maxResults": 10, "maxTokens": 100000, "includeSuperseded": True}
                if name == "all lanes, abstain off":
                    params["abstain"] = False
                reply = await call_json(service, "retrieve", params, lanes=frozenset(lanes))
                out[name].append([e["topicId"] for e in reply["entries"]])
        return out
    finally:
        await service.close()


def _cognee_chunks(workspace: Path, questions: list[dict[str, Any]]) -> list[list[str]]:
    """cognee's own CHUNKS search (it needs no LLM), in a child process configured for the workspace."""
    query_file = workspace / "bench-queries.json"
    query_file.write_text(json.dumps([q["question"] for q in questions]))
    out = subprocess.run(
        [sys.executable, "-m", "tests.bench.cognee_search", str(workspace), str(query_file)],
        env={**os.environ, "FLOWBABY_COGNEE_VECTORS": "1"},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_locomo(data: Path, root: Path) -> dict[str, Any]:
    from graph.core.settings import default_model_path
    from graph.search.embedder import Embedder

    embedder = Embedder(default_model_path())
    methods: dict[str, list[list[str]]] = defaultdict(list)
    all_questions: list[dict[str, Any]] = []
    latencies: list[float] = []
    ingest: dict[str, Any] = {}
    for conversation in load_conversations(data):
        workspace = root / conversation["sample"]
        workspace.mkdir(parents=True, exist_ok=True)
        questions = conversation["questions"]
        queries = [q["question"] for q in questions]
        run = _ingest_through_bridge(workspace, conversation["requests"])
        ranked, lat = _retrieve_through_bridge(run["client"], questions)
        run["client"].close()
        ingest[conversation["sample"]] = {k: v for k, v in run.items() if k != "client"} | {
            "sessions": len(conversation["requests"]),
            "questions": len(questions),
        }
        methods["flowbaby (bridge)"] += ranked
        latencies += lat
        for name, ranking in asyncio.run(_ablations(workspace, questions)).items():
            methods[f"flowbaby {name}"] += ranking
        bm25 = _bm25_rank(conversation["requests"], queries)
        minilm = maxsim_rank(conversation["requests"], queries, embedder)
        methods["baseline BM25"] += bm25
        methods["baseline MiniLM max-sim"] += minilm
        methods["baseline RRF(BM25, MiniLM)"] += _rrf(bm25, minilm)
        methods["cognee CHUNKS search"] += _cognee_chunks(workspace, questions)
        all_questions += questions
    return {
        "questions": len(all_questions),
        "ingest": ingest,
        "recall": {name: session_recall(ranked, all_questions) for name, ranked in methods.items()},
        "bridge_latency_ms": {
            "p50": round(float(np.median(latencies)), 2),
            "p95": round(float(np.percentile(latencies, 95)), 2),
        },
    }
