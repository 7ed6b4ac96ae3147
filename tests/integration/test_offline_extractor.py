"""The offline extractor: entities, resolution and relations read from memory documents."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph.extract.extractor import extract_graph, normalise, summarize

PLAN_015 = """# Topic: Plan 015 Implementation Strategy
Topic ID: plan-015-strategy
Status: Active
Plan: plan-015
Session: sess-2024-03-02
Agent: architect
Created: 2024-03-02T10:00:00.000Z

## Context
We are moving the session cache from Memcached to Redis because billing/reconcile.py keeps timing out with E_LEDGER_LOCK. See PR #482.

## Decisions
- Use Redis cache with a 15 minute TTL for session data
- The nightly reconciliation job uses Postgres advisory locks

## Rationale
- retrieveForAgent calls get_graph_engine() and cognee.cognify under the hood

## Open Questions
- Does HTTP 429 from the bridge map to WORKSPACE_BUSY in src/a_b.ts?

## References
- docs/adr/0007-redis.md
- https://example.com/ticket/JIRA-1234
"""

LOCOMO = (
    "Caroline attended an LGBTQ support group on 7 May 2023 and told Melanie about it. "
    "Melanie's kids loved the Pride Parade in Stockholm."
)

TOPIC = "topic:plan 015 implementation strategy"


def nodes_by_id(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["id"]: node for node in graph["nodes"]}


def edge_set(graph: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(e["source_node_id"], e["relationship_name"], e["target_node_id"]) for e in graph["edges"]}


def decision_named(graph: dict[str, Any], prefix: str) -> dict[str, Any]:
    return next(n for n in graph["nodes"] if n["type"] == "decision" and n["name"].startswith(prefix))


def test_plan_document_yields_typed_entities() -> None:
    nodes = nodes_by_id(extract_graph(PLAN_015))
    expected = {
        "redis": "technology",
        "memcached": "technology",
        "postgres": "technology",
        "billing/reconcile.py": "file",
        "src/a_b.ts": "file",
        "docs/adr/0007-redis.md": "file",
        "e_ledger_lock": "issue",
        "workspace_busy": "issue",
        "http 429": "issue",
        "#482": "issue",
        "jira-1234": "issue",
        "session cache": "component",
        "nightly reconciliation job": "component",
        "advisory lock": "component",
        "retrieveforagent": "identifier",
        "get_graph_engine": "identifier",
        "cognee.cognify": "identifier",
        "https://example.com/ticket/jira-1234": "identifier",
        "plan-15": "plan",
        "session:sess-2024-03-02": "session",
        TOPIC: "topic",
    }
    assert {key: nodes[key]["type"] for key in expected if key in nodes} == expected
    assert nodes["redis"]["name"] == "Redis"
    assert nodes["#482"]["name"] == "PR #482"
    assert nodes["e_ledger_lock"]["name"] == "E_LEDGER_LOCK"
    assert nodes[TOPIC]["name"] == "Plan 015 Implementation Strategy"
    assert set(nodes["redis"]["aliases"]) == {"Redis", "Redis cache"}
    assert nodes["redis"]["description"] == "Mentioned in context of 'Plan 015 Implementation Strategy'"
    assert nodes["postgres"]["description"] == "Mentioned in decisions of 'Plan 015 Implementation Strategy'"


def test_node_and_edge_schema() -> None:
    graph = extract_graph(PLAN_015)
    assert set(graph) == {"nodes", "edges"}
    for node in graph["nodes"]:
        assert set(node) == {"id", "name", "type", "description", "aliases"}
        assert all(isinstance(node[key], str) and node[key] for key in ("id", "name", "type", "description"))
    for edge in graph["edges"]:
        assert set(edge) == {"source_node_id", "target_node_id", "relationship_name", "description"}
        assert edge["relationship_name"].isidentifier() and edge["relationship_name"].islower()


def test_created_header_and_topic_id_are_not_entities() -> None:
    nodes = nodes_by_id(extract_graph(PLAN_015))
    assert not [n for n in nodes.values() if n["type"] == "date"]
    assert "architect" not in nodes and "plan-015-strategy" not in nodes


def test_decisions_are_nodes_about_their_entities() -> None:
    graph = extract_graph(PLAN_015)
    edges = edge_set(graph)
    ttl = decision_named(graph, "Use Redis cache with a 15 minute TTL")
    locks = decision_named(graph, "The nightly reconciliation job uses Postgres")
    assert (ttl["id"], "about", "redis") in edges
    assert (locks["id"], "about", "postgres") in edges
    assert (locks["id"], "about", "nightly reconciliation job") in edges
    assert (TOPIC, "decided", ttl["id"]) in edges
    assert (TOPIC, "decided", locks["id"]) in edges
    assert (ttl["id"], "about", "postgres") not in edges


def test_structural_edges() -> None:
    edges = edge_set(extract_graph(PLAN_015))
    assert ("plan-15", "contains", TOPIC) in edges
    assert (TOPIC, "part_of_session", "session:sess-2024-03-02") in edges
    for entity in ("redis", "memcached", "billing/reconcile.py", "#482", "jira-1234", "session cache"):
        assert (TOPIC, "mentions", entity) in edges


def test_stated_relations_in_the_plan() -> None:
    edges = edge_set(extract_graph(PLAN_015))
    assert ("memcached", "moved_to", "redis") in edges
    assert ("nightly reconciliation job", "uses", "postgres") in edges
    assert ("redis", "moved_to", "memcached") not in edges


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("We replaced Memcached with Redis.", ("memcached", "replaced_by", "redis")),
        ("The legacy queue was replaced by Kafka.", ("legacy queue", "replaced_by", "kafka")),
        ("Redis replaces Memcached for sessions.", ("memcached", "replaced_by", "redis")),
        ("The api gateway depends on the auth service.", ("api gateway", "depends_on", "auth service")),
        ("The billing worker relies on Postgres.", ("billing worker", "depends_on", "postgres")),
        ("Migrate the session cache to Redis.", ("session cache", "moved_to", "redis")),
        ("We switched from MySQL to PostgreSQL last week.", ("mysql", "moved_to", "postgres")),
        ("We moved the job queue to RabbitMQ.", ("job queue", "moved_to", "rabbitmq")),
        ("The export worker uses Celery.", ("export worker", "uses", "celery")),
    ],
)
def test_stated_relation_patterns(sentence: str, expected: tuple[str, str, str]) -> None:
    assert expected in edge_set(extract_graph(sentence))


def test_questions_state_no_relations() -> None:
    edges = edge_set(extract_graph("Should we replace XGBoost with LightGBM? We replaced Memcached with Redis."))
    assert ("memcached", "replaced_by", "redis") in edges
    assert not [e for e in edges if e[1] == "replaced_by" and e[0] != "memcached"]


def test_verbs_and_plurals_do_not_join_a_noun_phrase() -> None:
    nodes = nodes_by_id(extract_graph("Envoy supports retry budgets. The job misses late events."))
    assert "retry budget" in nodes and "supports retry budget" not in nodes
    assert "misses late event" not in nodes


def test_relation_edges_carry_their_sentence() -> None:
    graph = extract_graph("We replaced Memcached with Redis.")
    (edge,) = [e for e in graph["edges"] if e["relationship_name"] == "replaced_by"]
    assert edge["description"] == 'Memcached replaced by Redis: "We replaced Memcached with Redis."'


def test_documents_weeks_apart_share_node_ids() -> None:
    first = extract_graph("# Topic: Session storage\n\n## Decisions\n- Use the Redis cache for sessions\n")
    second = extract_graph("# Topic: Outage review\n\n## Context\nthe outage started when redis ran out of memory.\n")
    assert "redis" in nodes_by_id(first) and "redis" in nodes_by_id(second)
    shouting = extract_graph("REDIS and the PostgreSQL database and the Postgres server")
    assert {"redis", "postgres"} <= set(nodes_by_id(shouting))
    assert [n["id"] for n in shouting["nodes"]].count("postgres") == 1


def test_case_and_alias_variants_are_one_node_that_keeps_its_aliases() -> None:
    graph = extract_graph("Redis holds sessions; redis restarts lose nothing. The Redis cache has a 15 minute TTL.")
    redis = [n for n in graph["nodes"] if n["id"] == "redis"]
    assert len(redis) == 1 and not [n for n in graph["nodes"] if "redis" in n["id"] and n["id"] != "redis"]
    assert set(redis[0]["aliases"]) == {"Redis", "redis", "Redis cache"}
    assert redis[0]["name"] == "Redis"


def test_ticket_forms_resolve_together() -> None:
    keys = [set(nodes_by_id(extract_graph(text))) for text in ("See PR #482.", "Fixed in #482", "issue 482 again")]
    assert all("#482" in found for found in keys)


def test_locomo_free_text() -> None:
    graph = extract_graph(LOCOMO)
    nodes = nodes_by_id(graph)
    assert nodes["caroline"]["type"] == "person" and nodes["caroline"]["name"] == "Caroline"
    assert nodes["melanie"]["type"] == "person"
    assert nodes["2023-05-07"]["type"] == "date"
    assert nodes["2023-05-07"]["name"] == "7 May 2023"
    assert nodes["pride parade"]["name"] == "Pride Parade"
    assert nodes["stockholm"]["type"] == "place"
    assert nodes["caroline"]["description"] == "Mentioned in free text"
    assert not [n for n in graph["nodes"] if n["type"] == "topic"]


def test_dates_in_different_spellings_meet() -> None:
    for text in ("It happened on May 7, 2023.", "It happened on 2023-05-07.", "It happened on 7th May 2023."):
        assert "2023-05-07" in nodes_by_id(extract_graph(text))


@pytest.mark.parametrize(
    ("text", "key", "kind"),
    [
        ("New York and San Francisco", "new york", "place"),
        ("a grant from Acme Labs", "acme lab", "organization"),
        ("code reviewed by Caroline Smith", "caroline smith", "person"),
        ("wrap it in a MemoryStore", "memorystore", "identifier"),
        ("raises a TimeoutError sometimes", "timeouterror", "issue"),
        ("the README.md says so", "readme.md", "file"),
        ("we deploy with Node.js", "node.js", "technology"),
        ("the index now lives in LanceDB", "lancedb", "technology"),
        ("the job printed SENTRY_DSN in the log", "sentry_dsn", "identifier"),
        ("the export failed with EXPORT_TIMEOUT", "export_timeout", "issue"),
        ("- Tell Julia Novak before Monday", "julia novak", "person"),
        ("the api-gateway depends on it", "api-gateway", "component"),
        ("we run vitest-axe on each test", "vitest-axe", "technology"),
    ],
)
def test_entity_kinds(text: str, key: str, kind: str) -> None:
    assert nodes_by_id(extract_graph(text))[key]["type"] == kind


def test_capitalised_words_after_a_technology_name_one_product() -> None:
    nodes = nodes_by_id(
        extract_graph("Events land through Kafka Connect; CI runs on GitHub Actions and calls the Stripe API.")
    )
    assert nodes["kafka connect"]["type"] == "technology" and nodes["github actions"]["type"] == "technology"
    assert "stripe" in nodes and "kafka" not in nodes and "github" not in nodes
    dag = nodes_by_id(extract_graph("The nightly Airflow DAG failed."))
    assert "airflow" in dag and "airflow dag" not in dag


def test_hyphenated_compound_words_are_not_names() -> None:
    nodes = nodes_by_id(extract_graph("a long-lived token and a cross-site post, then a follow-up fetch"))
    assert not {"long-lived", "cross-site", "follow-up"} & set(nodes)


def test_everyday_words_are_not_entities() -> None:
    nodes = nodes_by_id(extract_graph("We go and/or rust the spring. Use the cache. Then it works."))
    assert nodes == {}


def test_sentence_case_titles_keep_their_names() -> None:
    edges = edge_set(extract_graph("# Topic: Move ingress from nginx to Envoy Gateway\n"))
    assert ("nginx", "moved_to", "envoy gateway") in edges


def test_title_case_titles_read_as_phrases() -> None:
    nodes = nodes_by_id(extract_graph("# Topic: Migrate Session Cache To Redis\n"))
    assert nodes["session cache"]["type"] == "component"
    assert ("session cache", "moved_to", "redis") in edge_set(extract_graph("# Topic: Migrate Session Cache To Redis"))


@pytest.mark.parametrize(
    "text",
    [
        PLAN_015,
        LOCOMO,
        "",
        "   \n\n",
        "## Decisions\n- Use Redis\n- Use Redis\n",
        "\ud800 \u200b ﬁle ＲＥＤＩＳ \x00 😀 Zoë",
        "x" * 100_000,
        "Redis uses Redis. " * 6000,
        "a/" * 50_000,
        "E_" * 50_000,
    ],
)
def test_edges_only_join_existing_nodes_without_duplicates(text: str) -> None:
    graph = extract_graph(text)
    ids = [n["id"] for n in graph["nodes"]]
    assert len(ids) == len(set(ids))
    triples = [(e["source_node_id"], e["relationship_name"], e["target_node_id"]) for e in graph["edges"]]
    assert len(triples) == len(set(triples))
    assert {end for source, _, target in triples for end in (source, target)} <= set(ids)
    assert all(source != target for source, _, target in triples)


def test_odd_unicode_is_normalised() -> None:
    assert "redis" in nodes_by_id(extract_graph("We use ＲＥＤＩＳ here"))


def test_large_text_is_handled() -> None:
    text = (PLAN_015 + "\n") * 140
    assert len(text) >= 100_000
    graph = extract_graph(text)
    assert len([n for n in graph["nodes"] if n["type"] == "topic"]) == 1
    assert "redis" in nodes_by_id(graph)


def test_deterministic() -> None:
    for text in (PLAN_015, LOCOMO):
        assert json.dumps(extract_graph(text)) == json.dumps(extract_graph(text))
        assert summarize(text) == summarize(text)


def test_empty_text_gives_empty_graph() -> None:
    assert extract_graph("") == {"nodes": [], "edges": []}
    assert extract_graph(" \n\t") == {"nodes": [], "edges": []}
    assert summarize("") == ""


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Redis", "redis"),
        ("redis", "redis"),
        ("REDIS", "redis"),
        ("Redis cache", "redis"),
        ("the Redis server", "redis"),
        ("Postgres database", "postgres"),
        ("PostgreSQL", "postgres"),
        ("pg", "postgres"),
        ("k8s", "kubernetes"),
        ("mongo", "mongodb"),
        ("JS", "javascript"),
        ("ts", "typescript"),
        ("advisory locks", "advisory lock"),
        ("caches", "cache"),
        ("queries", "query"),
        ("Kubernetes", "kubernetes"),
        ("postgres", "postgres"),
        ("status", "status"),
        ("bus", "bus"),
        ("classes", "class"),
        ("process", "process"),
        ("access", "access"),
        ("  “Session   Caches.” ", "session cache"),
        ("Ｒｅｄｉｓ", "redis"),
        ("E_LEDGER_LOCK", "e_ledger_lock"),
        ("", ""),
    ],
)
def test_normalise(name: str, key: str) -> None:
    assert normalise(name) == key


def test_summarize_memory_document() -> None:
    summary = summarize(PLAN_015)
    assert summary.splitlines() == [
        "Plan 015 Implementation Strategy: We are moving the session cache from Memcached to Redis because "
        "billing/reconcile.py keeps timing out with E_LEDGER_LOCK.",
        "- Use Redis cache with a 15 minute TTL for session data",
        "- The nightly reconciliation job uses Postgres advisory locks",
    ]


def test_summarize_free_text_and_bounds() -> None:
    assert summarize(LOCOMO + " A third sentence.") == LOCOMO
    long_doc = "# Topic: Long\n\n## Context\n" + "word " * 500 + "\n\n## Decisions\n" + "- decide\n" * 200
    assert len(summarize(long_doc)) <= 600
