"""The extractor benchmark's scoring, and a quality floor on the hand-labelled set."""

from __future__ import annotations

from typing import Any

from tests.bench.extractor import load_labels, memory_of, run_extractor_benchmark, score_graph


def node(key: str, name: str, kind: str, *aliases: str) -> dict[str, Any]:
    return {"id": key, "name": name, "type": kind, "description": "", "aliases": [name, *aliases]}


def edge(source: str, relationship: str, target: str) -> dict[str, str]:
    return {"source_node_id": source, "relationship_name": relationship, "target_node_id": target, "description": ""}


LABELS = {
    "entities": [
        {"name": "Redis", "type": "technology", "aliases": ["Redis cache"]},
        {"name": "session store", "type": "component"},
        {"name": "PR #12", "type": "issue"},
    ],
    "relations": [{"source": "session store", "relation": "uses", "target": "Redis"}],
}


def test_variants_match_on_the_normalised_key() -> None:
    graph = {
        "nodes": [
            node("redis", "Redis", "technology", "REDIS"),
            node("session store", "Session Stores", "component"),
            node("#12", "PR #12", "issue"),
            node("topic:x", "x", "topic"),
        ],
        "edges": [edge("session store", "uses", "redis"), edge("topic:x", "mentions", "redis")],
    }
    result = score_graph(graph, LABELS)
    assert (result["found"], result["foundTyped"], result["predicted"], result["correct"]) == (3, 3, 3, 3)
    assert (result["relationsFound"], result["relationsPredicted"], result["relationsCorrect"]) == (1, 1, 1)


def test_misses_wrong_types_and_spurious_nodes_count_against() -> None:
    graph = {
        "nodes": [
            node("redis", "Redis", "concept"),
            node("session", "session", "concept"),
            node("store", "store", "concept"),
        ],
        "edges": [edge("redis", "uses", "session")],
    }
    result = score_graph(graph, LABELS)
    assert (result["found"], result["foundTyped"]) == (1, 0)
    assert (result["predicted"], result["correct"], result["correctTyped"]) == (3, 1, 0)
    assert result["missed"] == ["session store", "PR #12"]
    assert (result["relationsFound"], result["relationsCorrect"]) == (0, 0)


def test_two_nodes_for_one_label_are_a_split() -> None:
    graph = {
        "nodes": [node("redis", "Redis", "technology"), node("redis cache", "Redis cache", "component")],
        "edges": [],
    }
    assert score_graph(graph, LABELS)["split"] == 1


def test_labelled_set_shape() -> None:
    data = load_labels()
    assert len(data["summaries"]) == 20
    topics = {item["summary"]["metadata"]["topicId"] for item in data["summaries"]}
    assert len(topics) == 20
    for item in data["summaries"]:
        names = {label["name"] for label in item["entities"]}
        assert len(names) == len(item["entities"])
        assert all(r["source"] in names and r["target"] in names for r in item["relations"])
        assert memory_of(item["summary"]).topic == item["summary"]["topic"]
    assert all(set(shared["topics"]) <= topics for shared in data["shared"])


def test_extractor_quality_floor() -> None:
    """Floors a little under the measured numbers (tests/bench/extractor.py): a regression fails."""
    result = run_extractor_benchmark()
    assert result["entity"]["precision"] >= 0.78
    assert result["entity"]["recall"] >= 0.79
    assert result["typed"]["precision"] >= 0.70
    assert result["typed"]["recall"] >= 0.71
    assert result["relations"]["precision"] >= 0.55
    assert result["relations"]["recall"] >= 0.45
    assert result["sharedAcrossSummaries"]["rate"] >= 0.75
    assert result["perSummary"]["entities"]["mean"] >= 8
