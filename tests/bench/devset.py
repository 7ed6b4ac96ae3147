"""Retrieval quality on flowbaby's own labelled developer memories (tests/support/fixtures/devmem_pawpoint.json).

The workspace is built from the engine's own parts, as the latency bench does: memories staged in
the store, MiniLM vectors in LanceDB, and the projection built by the offline extractor and
build_projection, exactly what the worker writes with the offline extractor. Questions are asked
in-process through the Retriever with all lanes, without the graph lane, and against an RRF(BM25,
MiniLM) baseline, so the graph's contribution and the abstention trade-off show in one run.

Metrics (each kind is a list of questions in the fixture):
- cause-effect: both memories of the pair in the top 5;
- supersession: the newer memory (another topicId) ranked above the older one, and in the top 3;
- paraphrase / identifier: the answer at hit@3;
- unanswerable: the share that returns nothing (abstention), against the answerable R@5 it costs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graph.backends.embedded.memory_store import MemoryStore, open_sealed_store
from graph.backends.embedded.projection import FileProjection
from graph.backends.embedded.vectors import VectorIndex
from graph.core.contract import FlowbabyContextRequest, MemoryStatus
from graph.core.graph_projection import build_projection, save_projection
from graph.core.memories import Memory, new_operation_id
from graph.core.workspace import resolve_workspace
from graph.search.catalog import Catalog
from graph.search.embedder import Embedder
from graph.search.graph_lane import GraphLane
from graph.search.retrieval import LANES, Retriever
from tests.bench.latency import _cognee_shaped

DEVSET = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "devmem_pawpoint.json"


def to_memory(request: dict[str, Any]) -> Memory:
    meta = request["metadata"]
    return Memory(
        memory_id="",
        topic_id=meta["topicId"],
        version=0,
        status=MemoryStatus(meta.get("status", "Active")),
        topic=request["topic"],
        context=request["context"],
        decisions=list(request.get("decisions", [])),
        rationale=list(request.get("rationale", [])),
        open_questions=list(request.get("openQuestions", [])),
        next_steps=list(request.get("nextSteps", [])),
        references=list(request.get("references", [])),
        time_scope=None,
        agent_name="bench",
        session_id=meta.get("sessionId"),
        plan_id=meta.get("planId"),
        created_at=meta["createdAt"],
        updated_at=meta.get("updatedAt", meta["createdAt"]),
        staged_at=meta["createdAt"],
    )


def build_offline_workspace(root: Path, requests: list[dict[str, Any]], embedder: Embedder) -> Retriever:
    """The workspace's store, vectors and projection from the engine's parts, and a Retriever over them."""
    paths = resolve_workspace(root)
    store = open_sealed_store(paths)  # made as the owner makes it: sealed, so a bridge may open it
    for request in requests:
        operation = new_operation_id()
        store.stage(to_memory(request), operation)
        store.finish([operation], "completed")
    memories = list(store.iter_memories())
    store.close()
    index = VectorIndex(paths.vectors, embedder)
    index.add_memories(memories)
    nodes, edges = _cognee_shaped(memories)
    save_projection(build_projection(nodes, edges, memories), paths.projection)
    return Retriever(Catalog(memories), embedder, GraphLane(FileProjection(paths.projection)), lambda: index)


def rank_topics(
    retriever: Retriever, question: str, lanes: frozenset[str] = LANES, k: int = 10, abstain: bool = True
) -> list[str]:
    request = FlowbabyContextRequest(
        query=question, maxResults=k, maxTokens=100_000, includeSuperseded=True, abstain=abstain
    )
    entries = retriever.retrieve(request, lanes).entries
    return [e.topicId for e in entries]


def score(questions: list[dict[str, Any]], ranked: list[list[str]]) -> dict[str, float]:
    """The fixture's metrics for one method (rankings in question order)."""
    out: dict[str, list[float]] = {}
    answerable: list[float] = []
    for q, r in zip(questions, ranked, strict=True):
        kind = q["kind"]
        if kind == "cause-effect":
            out.setdefault("cause-effect both@5", []).append(float(all(a in r[:5] for a in q["answers"])))
            out.setdefault("cause-effect cause@5", []).append(float(q["answers"][1] in r[:5]))
        elif kind == "supersession":
            newer = r.index(q["newer"]) if q["newer"] in r else 99
            older = r.index(q["older"]) if q["older"] in r else 98
            out.setdefault("supersession newer-first", []).append(float(newer < older and newer < 3))
        elif kind == "unanswerable":
            out.setdefault("unanswerable nothing", []).append(float(not r))
            continue
        else:
            out.setdefault(f"{kind} hit@3", []).append(float(any(a in r[:3] for a in q["answers"])))
        answerable.append(sum(a in r[:5] for a in q["answers"]) / len(q["answers"]))
    result = {name: round(sum(v) / len(v), 3) for name, v in out.items()}
    result["answerable R@5"] = round(100 * sum(answerable) / len(answerable), 1)
    return result


def load_devset(path: Path = DEVSET) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    return data["memories"], data["questions"]


def run_devset(root: Path, path: Path = DEVSET) -> dict[str, Any]:
    from graph.core.settings import default_model_path
    from tests.bench.locomo import _bm25_rank, _rrf, maxsim_rank

    requests, questions = load_devset(path)
    embedder = Embedder(default_model_path())
    retriever = build_offline_workspace(root, requests, embedder)
    asked = [q["question"] for q in questions]
    methods = {
        "flowbaby": [rank_topics(retriever, q) for q in asked],
        "flowbaby, abstain off": [rank_topics(retriever, q, abstain=False) for q in asked],
        "flowbaby without graph": [rank_topics(retriever, q, frozenset({"vector", "lexical"})) for q in asked],
        "baseline RRF(BM25, MiniLM)": _rrf(_bm25_rank(requests, asked), maxsim_rank(requests, asked, embedder)),
    }
    scores = {name: score(questions, ranked) for name, ranked in methods.items()}
    # Leave-out check: the same metrics on each half (fold) of every kind of question.
    for fold in (0, 1):
        picked = [i for i, q in enumerate(questions) if q["fold"] == fold]
        scores[f"flowbaby, fold {fold}"] = score(
            [questions[i] for i in picked], [methods["flowbaby"][i] for i in picked]
        )
    return {"memories": len(requests), "questions": len(questions), "scores": scores}


def open_offline_workspace(root: Path, embedder: Embedder) -> Retriever:
    """A Retriever over a workspace build_offline_workspace made earlier (tuning reruns)."""
    paths = resolve_workspace(root)
    store = MemoryStore(paths.store_db)
    memories = list(store.iter_memories())
    store.close()
    index = VectorIndex(paths.vectors, embedder)
    return Retriever(Catalog(memories), embedder, GraphLane(FileProjection(paths.projection)), lambda: index)
