"""Second hop, `via`, implicit supersession and abstention through the real bridge and HTTP server,
on a slice of the Pawpoint dev set ingested with the offline extractor (real cognee, LanceDB, MiniLM)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from bridge.client import BridgeClient
from tests.bench.devset import DEVSET
from tests.integration.test_http_api import Server, _token

pytestmark = pytest.mark.slow

SLICE = [
    "rec-transcode-job",
    "spot-cost-review",  # the cause: shares only `media-pool` with the transcode job
    "double-booking-bug",
    "paw-1432-revert",
    "mobile-offline-realm",
    "offline-store-sqlite",  # moves the offline store from Realm to SQLite
    "video-twilio",
    "video-livekit",  # "Twilio Video was replaced ... after Twilio ..."
    "sms-twilio",  # must not be marked by the Twilio Video replacement
    "standup-time",  # "Moved the daily standup from 09:30 to 10:00": replaces nothing
    "transcode-format",
    "reminder-templates",
    "calendar-colours",
    "repo-layout",
]
CAUSE_QUESTION = "Why have telehealth recording transcodes been failing halfway through since early March?"
CURRENT_QUESTION = "Where does the mobile app keep offline data?"
UNANSWERABLE = "Which GraphQL gateway did we pick for the partner API?"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    requests = {r["metadata"]["topicId"]: r for r in json.loads(DEVSET.read_text())["memories"]}
    root = tmp_path_factory.mktemp("graphhop") / "ws"
    root.mkdir()
    env = {**os.environ, "FLOWBABY_MAX_RUNNING": "20", "FLOWBABY_MAX_QUEUED": "50"}
    client = BridgeClient(root, env=env, extra_args=["--rate-limit-per-minute", "0"])
    try:
        for topic_id in SLICE:
            assert client.result("ingestForAgent", requests[topic_id])["success"]
        client.wait_idle(600)
    finally:
        client.close()
    return root


def _retrieve(client: BridgeClient, query: str, method: str = "retrieveForAgent", **extra: object) -> dict:
    reply = client.result(method, {"query": query, "maxResults": 5, **extra})
    assert reply["success"], reply
    return reply


def test_bridge_second_hop_via_supersession_and_abstention(workspace: Path) -> None:
    client = BridgeClient(workspace, extra_args=["--rate-limit-per-minute", "0"])
    try:
        reply = _retrieve(client, CAUSE_QUESTION)
        entries = {e["topicId"]: e for e in reply["entries"]}
        assert {"rec-transcode-job", "spot-cost-review"} <= set(entries)
        assert entries["rec-transcode-job"]["via"] is None
        assert entries["spot-cost-review"]["via"] == "reached from `rec-transcode-job` through `media-pool`"
        markdown = _retrieve(client, CAUSE_QUESTION, "retrieveMemory")["markdown"]
        assert "**Via:** reached from `rec-transcode-job` through `media-pool`" in markdown

        # Implicit supersession: listed (and only the true pair), newer first, older marked not hidden.
        listed = client.result("listImpliedSupersessions", {})
        pairs = {(p["older"]["topicId"], p["newer"]["topicId"]) for p in listed["pairs"]}
        assert pairs == {("mobile-offline-realm", "offline-store-sqlite"), ("video-twilio", "video-livekit")}
        assert client.result("indexStatus", {})["counts"]["impliedSupersessions"] == 2
        topics = [e["topicId"] for e in _retrieve(client, CURRENT_QUESTION)["entries"]]
        assert topics.index("offline-store-sqlite") < topics.index("mobile-offline-realm")
        older = next(
            e for e in _retrieve(client, CURRENT_QUESTION)["entries"] if e["topicId"] == "mobile-offline-realm"
        )
        assert older["possiblySupersededBy"] == "offline-store-sqlite" and older["status"] == "DecisionRecord"
        sms = _retrieve(client, "Which provider sends our reminder SMS?")["entries"]
        assert all(e["possiblySupersededBy"] is None for e in sms if e["topicId"] == "sms-twilio")

        # Abstention: an empty result that says why; abstain=false returns the weak matches.
        none = _retrieve(client, UNANSWERABLE)
        assert none["entries"] == [] and none["abstained"] is True and none["abstainReason"].startswith("no memory")
        weak = none["weakCandidates"]  # the agent can still judge the best two, flagged weak
        assert 0 < len(weak) <= 2 and all(w["weak"] and w["source"] == "memory" for w in weak)
        assert "Nothing relevant was found: no memory" in _retrieve(client, UNANSWERABLE, "retrieveMemory")["markdown"]
        assert _retrieve(client, UNANSWERABLE, abstain=False)["entries"]
        assert _retrieve(client, CAUSE_QUESTION)["abstained"] is False

        # Confirming sets the older version to Superseded: hidden by default, shown when asked for.
        bad = client.result("confirmSupersession", {"olderTopicId": "sms-twilio", "newerTopicId": "video-livekit"})
        assert bad["success"] is False and bad["errorCode"] == "NOT_FOUND"
        confirmed = client.result(
            "confirmSupersession", {"olderTopicId": "mobile-offline-realm", "newerTopicId": "offline-store-sqlite"}
        )
        assert confirmed["success"] and confirmed["status"] == "Superseded"
        assert "mobile-offline-realm" not in [e["topicId"] for e in _retrieve(client, CURRENT_QUESTION)["entries"]]
        shown = _retrieve(client, CURRENT_QUESTION, includeSuperseded=True)["entries"]
        assert {e["topicId"]: e["status"] for e in shown}["mobile-offline-realm"] == "Superseded"
        assert client.result("listImpliedSupersessions", {})["count"] == 1
    finally:
        client.close()
    # The confirmation is stored, not only in the live index.
    client = BridgeClient(workspace, extra_args=["--rate-limit-per-minute", "0"])
    try:
        assert client.result("listImpliedSupersessions", {})["count"] == 1
    finally:
        client.close()


def test_http_context_endpoint_shows_via_and_supersessions(workspace: Path) -> None:
    server = Server(workspace)
    try:
        server.wait_ready()
        headers = {"Authorization": f"Bearer {_token(workspace)}"}
        reply = httpx.post(
            f"{server.url}/api/agent/retrieve",
            json={"query": CAUSE_QUESTION, "maxResults": 5},
            headers=headers,
            timeout=120,
        ).json()
        vias = {e["topicId"]: e["via"] for e in reply["entries"]}
        assert vias["spot-cost-review"] == "reached from `rec-transcode-job` through `media-pool`"
        listed = httpx.get(f"{server.url}/api/agent/supersessions", headers=headers, timeout=60).json()
        assert listed["success"] and listed["count"] == len(listed["pairs"]) >= 1
        missing = httpx.post(
            f"{server.url}/api/agent/supersessions/confirm",
            json={"olderTopicId": "nope", "newerTopicId": "nope"},
            headers=headers,
        )
        assert missing.status_code == 404 and missing.json()["errorCode"] == "NOT_FOUND"
    finally:
        server.stop()
