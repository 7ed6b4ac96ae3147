"""Retrieval through the real bridge: ranking rules, lanes, budget, errors and throttles."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.client import BridgeClient
from graph.api import adopt_workspace
from graph.search.token_budget import count_tokens
from tests.conftest import summary
from tests.support.built_workspaces import built_copy
from tests.support.retrieval_fixtures import (
    MULTI_HOP_FIRST,
    MULTI_HOP_QUESTION,
    MULTI_HOP_SECOND,
    MULTI_HOP_SET,
    memory,
)

pytestmark = pytest.mark.slow

UNTHROTTLED = ["--rate-limit-per-minute", "0"]
ROOMY = {"FLOWBABY_MAX_RUNNING": "20", "FLOWBABY_MAX_QUEUED": "50"}


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **ROOMY, **extra}


def _ingest_all(client: BridgeClient, payloads: list[dict]) -> None:
    for payload in payloads:
        assert client.result("ingestForAgent", payload)["success"]
    client.wait_idle(600)


def _topics(reply: dict) -> list[str]:
    assert reply["success"], reply
    return [entry["topicId"] for entry in reply["entries"]]


@pytest.fixture(scope="module")
def built_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace with the graph built, shared by the read-only tests below."""
    root = tmp_path_factory.mktemp("retrieval") / "ws"
    root.mkdir()
    client = BridgeClient(root, env=_env(), extra_args=UNTHROTTLED)
    try:
        _ingest_all(
            client,
            MULTI_HOP_SET
            + [
                memory(
                    "sentinel",
                    "Redis failover with Sentinel",
                    "The session cache depends on one Redis primary; we deploy Redis Sentinel with three sentinels.",
                    "2025-04-10T10:00:00Z",
                    references=["gateway/ratelimit.go"],
                    decisions=["Clients use the Sentinel-aware connection pool"],
                ),
            ],
        )
    finally:
        client.close()
    return root


@pytest.fixture(scope="module")
def built(built_workspace: Path) -> Iterator[BridgeClient]:
    """One bridge with the default lanes on a copy of the built workspace, shared by the tests that
    only read through it (a copy, so a test that starts its own bridge with other settings on the
    original is not answered by this one as the owner)."""
    copy = built_workspace.parent / "shared-copy"
    shutil.copytree(built_workspace, copy)
    adopt_workspace(copy)  # the seals bind the folder: a copy elsewhere is the user's by `flowbaby adopt`
    client = BridgeClient(copy, env=_env(), extra_args=UNTHROTTLED)
    yield client
    client.close()


def test_empty_store_and_no_match_are_success_without_entries(spawn, workspace: Path, built: BridgeClient) -> None:
    empty = spawn(workspace, *UNTHROTTLED).result("retrieveForAgent", {"query": "anything at all"})
    assert empty == {
        "success": True,
        "entries": [],
        "totalResults": 0,
        "tokensUsed": 0,
        "abstained": False,
        "abstainReason": None,
        "weakCandidates": [],
    }
    assert built.result("retrieveForAgent", {"query": "banana smoothie recipe with oat milk"})["entries"] == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("E_LEDGER_LOCK", MULTI_HOP_FIRST),
        ("billing/ledger.py", MULTI_HOP_SECOND),
        ("PR #482", "redis-cache"),
        ("gateway/ratelimit.go", "sentinel"),
        ("PLAT-2291", MULTI_HOP_SECOND),
    ],
)
def test_identifier_queries_hit_first(built: BridgeClient, query: str, expected: str) -> None:
    reply = built.result("retrieveForAgent", {"query": query})
    assert _topics(reply)[0] == expected
    assert "lexical" in reply["entries"][0]["lanes"]


def test_multi_hop_needs_the_graph_lane(spawn, built_workspace: Path, built: BridgeClient) -> None:
    request = {"query": MULTI_HOP_QUESTION, "maxResults": 2}
    without = spawn(built_workspace, *UNTHROTTLED, env=_env(FLOWBABY_RETRIEVAL_LANES="vector,lexical"))
    plain = _topics(without.result("retrieveForAgent", request))
    without.close()
    assert plain[0] == MULTI_HOP_FIRST and MULTI_HOP_SECOND not in plain
    reply = built.result("retrieveForAgent", request)  # the same workspace (a copy), all lanes
    assert _topics(reply) == [MULTI_HOP_FIRST, MULTI_HOP_SECOND]
    assert "graph" in reply["entries"][1]["lanes"]


def test_entries_carry_the_contract_fields(built: BridgeClient) -> None:
    reply = built.result("retrieveForAgent", {"query": "Redis session cache TTL", "maxResults": 5})
    scores = [e["score"] for e in reply["entries"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    top = reply["entries"][0]
    assert top["topicId"] == "redis-cache" and top["status"] == "DecisionRecord"
    for key in ("summaryText", "topic", "topicId", "planId", "createdAt", "status", "score", "decisions", "lanes"):
        assert key in top
    assert reply["totalResults"] == len(reply["entries"])


def test_token_budget_is_counted_and_respected(built: BridgeClient) -> None:
    client = built
    roomy = client.result(
        "retrieveForAgent", {"query": "invoice export failures", "maxResults": 5, "maxTokens": 100000}
    )
    assert len(roomy["entries"]) >= 3
    for entry in roomy["entries"]:
        assert entry["tokens"] == count_tokens(entry["summaryText"])
    assert roomy["tokensUsed"] == sum(e["tokens"] for e in roomy["entries"])
    budget = roomy["entries"][0]["tokens"] + roomy["entries"][1]["tokens"]
    tight = client.result(
        "retrieveForAgent", {"query": "invoice export failures", "maxResults": 5, "maxTokens": budget}
    )
    assert tight["tokensUsed"] <= budget
    assert [e["topicId"] for e in tight["entries"]][:2] == [e["topicId"] for e in roomy["entries"]][:2]
    tiny = client.result("retrieveForAgent", {"query": "invoice export failures", "maxTokens": 12})
    assert len(tiny["entries"]) == 1 and tiny["tokensUsed"] <= 12
    assert tiny["entries"][0]["summaryText"].endswith("[truncated]")


def test_retrieve_memory_returns_markdown(built: BridgeClient) -> None:
    client = built
    reply = client.result("retrieveMemory", {"query": "Redis Sentinel failover"})
    assert reply["markdown"].startswith(f"# Retrieved Memories ({len(reply['entries'])} results)")
    assert "## 1. Redis failover with Sentinel" in reply["markdown"]
    assert "**Relevance score:**" in reply["markdown"] and "**Decisions:**" in reply["markdown"]
    too_many = client.result("retrieveMemory", {"query": "x", "maxResults": 11})
    assert too_many["errorCode"] == "INVALID_REQUEST" and too_many["error"] == "INVALID_REQUEST"


def _ttl_versions() -> list[dict]:
    """Three versions of one decision, the newest last."""
    return [
        summary(
            "ttl-decision",
            decisions=[f"Use a {ttl} minute TTL for the Redis session cache"],
            metadata={
                "topicId": "ttl-decision",
                "createdAt": f"2025-03-{day}T10:00:00Z",
                "updatedAt": f"2025-03-{day}T10:00:00Z",
                "status": "DecisionRecord",
            },
        )
        for ttl, day in ((15, "01"), (30, "10"), (60, "20"))
    ]


RECON_TEXT = "The nightly reconciliation job now runs per-account batches on the reconcile queue."


def _dated_memories() -> list[dict]:
    """Three near-identical memories of different dates, one old memory that alone answers its
    question, and four recent ones about something else."""
    ties = [
        memory(f"recon-{day}", "Reconciliation batches", RECON_TEXT, f"2025-{day}T10:00:00Z")
        for day in ("01-05", "06-05", "03-05")
    ]
    old_only = memory(
        "kafka-retention",
        "billing-events Kafka retention",
        "The billing-events Kafka topic keeps 30 days of messages.",
        "2021-01-01T10:00:00Z",
    )
    recent = [
        memory(
            f"misc-{i}",
            f"Frontend note {i}",
            f"The React dashboard widget {i} got a new colour scheme.",
            f"2025-06-{10 + i:02d}T10:00:00Z",
        )
        for i in range(4)
    ]
    return ties + [old_only] + recent


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeClient]:
    """One bridge on one workspace holding a revised decision and dated memories: the supersession and
    recency tests below only read it. It builds no graph (no cognee worker): versions, dates and the vector
    and lexical lanes decide these rankings, and a retrieval waits for the memories staged before it."""
    root = tmp_path_factory.mktemp("dated") / "ws"
    root.mkdir()
    client = BridgeClient(root, env=_env(FLOWBABY_BUILD_GRAPH="0"), extra_args=UNTHROTTLED)
    try:
        for payload in _ttl_versions() + _dated_memories():
            assert client.result("ingestForAgent", payload)["success"]
    except BaseException:
        client.close()
        raise
    yield client
    client.close()


def test_supersession_hides_older_versions(dated: BridgeClient) -> None:
    visible = dated.result("retrieveForAgent", {"query": "Redis session cache TTL", "maxResults": 5})
    assert [(e["topicId"], e["version"], e["status"]) for e in visible["entries"]] == [
        ("ttl-decision", 3, "DecisionRecord")
    ]
    chain = dated.result(
        "retrieveForAgent", {"query": "Redis session cache TTL", "maxResults": 5, "includeSuperseded": True}
    )
    assert chain["entries"][0]["version"] == 3  # the newest of the revised chain first
    assert sorted((e["version"], e["status"]) for e in chain["entries"]) == [
        (1, "Superseded"),
        (2, "Superseded"),
        (3, "DecisionRecord"),
    ]


def test_recency_orders_near_ties_but_never_buries_the_only_match(dated: BridgeClient) -> None:
    ties = dated.result("retrieveForAgent", {"query": "reconciliation per-account batches", "maxResults": 3})
    assert _topics(ties) == ["recon-06-05", "recon-03-05", "recon-01-05"]
    old = dated.result(
        "retrieveForAgent", {"query": "How long does the billing-events topic keep messages?", "halfLifeDays": 1}
    )
    assert _topics(old)[0] == "kafka-retention"


def test_invalid_requests_name_the_field(spawn, workspace: Path) -> None:
    client = spawn(workspace, *UNTHROTTLED)
    for params, field in (
        ({}, "query"),
        ({"query": "  "}, "query"),
        ({"query": "x", "maxResults": 0}, "maxResults"),
        ({"query": "x", "maxResults": 51}, "maxResults"),
        ({"query": "x", "maxTokens": "5"}, "maxTokens"),
        ({"query": "x", "includeSuperseded": 1}, "includeSuperseded"),
        ({"query": "x", "halfLifeDays": 0}, "halfLifeDays"),
        ({"query": "x", "contextHints": [3]}, "contextHints.0"),
    ):
        reply = client.result("retrieveForAgent", params)
        assert reply["success"] is False and reply["errorCode"] == "INVALID_REQUEST", params
        assert f'"{field}"' in reply["message"], reply


def test_rate_limit_per_minute(spawn, workspace: Path) -> None:
    client = spawn(workspace)  # the default: 10 per minute
    replies = [client.result("retrieveForAgent", {"query": f"question {i}"}) for i in range(11)]
    assert all(r["success"] for r in replies[:10])
    assert replies[10]["errorCode"] == "RATE_LIMIT_EXCEEDED"
    assert "429_AGENT_THROTTLED" in replies[10]["message"] and replies[10]["retryAfterSec"] >= 1


def test_workspace_cannot_lift_the_rate_limit_past_30(spawn, workspace: Path) -> None:
    (workspace / ".env").write_text("FLOWBABY_RETRIEVAL_RATE_PER_MINUTE=1000\n")
    client = spawn(workspace, env={k: v for k, v in os.environ.items() if not k.startswith("FLOWBABY_")})
    codes = [client.result("retrieveForAgent", {"query": f"q{i}"}).get("errorCode") for i in range(31)]
    assert codes[:30] == [None] * 30 and codes[30] == "RATE_LIMIT_EXCEEDED"


def test_queue_full_beyond_two_running_and_five_waiting(spawn, workspace: Path) -> None:
    client = spawn(workspace, *UNTHROTTLED)
    client.result("retrieveForAgent", {"query": "warm up"})
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "retrieveForAgent", "params": {"query": f"burst {i}"}} for i in range(10)
    ]
    replies = client.send_raw(json.dumps(batch).encode() + b"\n", timeout=120)
    codes = [r["result"].get("errorCode") for r in sorted(replies, key=lambda r: r["id"])]
    assert codes == [None] * 7 + ["QUEUE_FULL"] * 3
    full = next(r["result"] for r in replies if r["result"].get("errorCode"))
    assert "429_AGENT_THROTTLED" in full["message"]


def test_search_over_its_deadline_is_bridge_timeout(spawn, built_workspace: Path) -> None:
    """On the built workspace: a search with memories, vectors and a graph to walk, and no ingest
    (whose cognee worker would only add a start to pay for)."""
    client = spawn(built_workspace, *UNTHROTTLED, env=_env(FLOWBABY_RETRIEVAL_TIMEOUT_SEC="0.001"))
    reply = client.result("retrieveForAgent", {"query": "Redis session cache"})
    assert reply["success"] is False and reply["errorCode"] == "BRIDGE_TIMEOUT"
    assert client.result("health")["success"]  # an error, never a hang


def test_unloadable_index_is_not_initialized(spawn, workspace: Path, tmp_path: Path) -> None:
    empty_model = tmp_path / "not-a-model"
    empty_model.mkdir()
    env = _env(FLOWBABY_EMBEDDING_MODEL=str(empty_model), FLOWBABY_BUILD_GRAPH="0")  # reads no graph
    client = spawn(workspace, *UNTHROTTLED, env=env)
    reply = client.result("retrieveForAgent", {"query": "anything"})
    assert reply["errorCode"] == "NOT_INITIALIZED" and reply["error"] == "NOT_INITIALIZED"
    assert 1 <= reply["retryAfterSec"] <= 5 and "loads it again" in reply["message"]  # tried again, spaced
    assert client.result("ingestForAgent", summary())["staged"]  # staging does not need the model


def test_demo_questions_find_their_answers(spawn, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The demo's promises, at the demo's three results: the newest of three versions, and the
    rollout that only the graph links to the incident (a vector pick must not push it out). The demo's
    summaries are ingested and their graph built once per run (tests/support/built_workspaces.py)."""
    client = spawn(built_copy(tmp_path_factory, "demo", tmp_path / "demo"), *UNTHROTTLED, env=_env())
    ttl = _topics(
        client.result(
            "retrieveForAgent", {"query": "What TTL do we use for the Redis session cache now?", "maxResults": 3}
        )
    )
    assert ttl[0] == "redis-session-cache"
    fix = client.result(
        "retrieveForAgent", {"query": "What was the permanent fix for the E_LEDGER_LOCK incident?", "maxResults": 3}
    )
    assert _topics(fix)[0] == "ledger-lock-incident" and "advisory-locks-rollout" in _topics(fix)
    scores = [entry["score"] for entry in fix["entries"]]
    assert scores == sorted(scores, reverse=True)
