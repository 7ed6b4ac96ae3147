"""The stdio bridge as a subprocess: framing, protocol faults, workspace errors, staging."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import summary


def test_health_answers_fast_and_stdout_is_protocol_only(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    health = client.result("health", timeout=30)
    elapsed = time.perf_counter() - client.started
    assert health["success"] and health["status"] == "ready"
    assert health["workspace"] == str(workspace.resolve())
    assert elapsed < 10  # the benchmark measures the real figure; this only guards against heavy imports
    client.close()
    for line in client.raw_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_protocol_faults_keep_the_bridge_serving(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    assert client.send_raw(b"{not json\n")["error"]["code"] == -32700
    assert client.send_raw(b"\xff\xfe garbage\n")["error"]["code"] == -32700
    assert client.send_raw(b'"just a string"\n')["error"]["code"] == -32600
    assert client.send_raw(b"[]\n")["error"]["code"] == -32600
    assert client.send_raw(b'{"id": 7, "method": "health"}\n')["error"]["code"] == -32600
    assert client.send_raw(b'{"jsonrpc": "2.0", "id": 8, "method": 5}\n')["error"]["code"] == -32600
    unknown = client.call("noSuchMethod", {})
    assert unknown["error"]["code"] == -32601
    wrong_params = client.call("ingestForAgent", ["topic"])
    assert wrong_params["error"]["code"] == -32602
    huge = b'{"jsonrpc":"2.0","id":9,"method":"health","params":{"x":"' + b"a" * (5 * 1024 * 1024) + b'"}}\n'
    assert client.send_raw(huge)["error"]["code"] == -32600
    batch = client.send_raw(b'[{"jsonrpc":"2.0","id":"a","method":"health"},{"jsonrpc":"2.0","method":"health"}]\n')
    assert isinstance(batch, list) and len(batch) == 1 and batch[0]["id"] == "a"
    assert client.result("health")["success"]


def test_invalid_payload_is_a_result_and_stages_nothing(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    reply = client.result("ingestForAgent", summary(topic=""))
    assert reply == {
        "success": False,
        "error": 'Field "topic" must be a non-empty string',
        "errorCode": "INVALID_PAYLOAD",
        "fields": ["topic"],
    }
    too_big = client.result("ingestForAgent", summary(context="z" * 100_001))
    assert too_big["errorCode"] == "INVALID_PAYLOAD" and '"payload"' in too_big["error"]
    assert client.result("health")["memories"] == 0
    audit = [json.loads(line) for line in (workspace / ".flowbaby" / "agent_audit.log").read_text().splitlines()]
    assert [entry["errorCode"] for entry in audit] == ["INVALID_PAYLOAD", "INVALID_PAYLOAD"]
    assert audit[1]["topicDigest"] == "7c79927d" and audit[1]["agentName"] == "architect"


def test_missing_workspace_fails_at_once(spawn, tmp_path: Path) -> None:
    client = spawn(tmp_path / "does-not-exist")
    notice = client.wait_notification(30)
    assert notice["method"] == "bridgeUnavailable"
    assert notice["params"]["errorCode"] == "INVALID_WORKSPACE_PATH"
    assert client.proc.wait(30) == 3


def test_unusable_embedding_model_is_flowbaby_error(spawn, workspace: Path) -> None:
    client = spawn(workspace, env={**os.environ, "FLOWBABY_EMBEDDING_MODEL": str(workspace / "no-model")})
    notice = client.wait_notification(30)
    assert notice["params"]["errorCode"] == "FLOWBABY_ERROR"
    assert "FLOWBABY_EMBEDDING_MODEL" in notice["params"]["error"]
    assert client.proc.wait(30) == 3


def test_a_second_front_works_through_the_owner(spawn, workspace: Path) -> None:
    """Both fronts see one workspace: one store, one ledger, one throttle."""
    env = {**os.environ, "FLOWBABY_RETRIEVAL_RATE_PER_MINUTE": "3", "FLOWBABY_MAX_QUEUED": "50"}
    owner = spawn(workspace, env=env)
    owner_pid = owner.result("health")["pid"]
    second = spawn(workspace, env=env)
    assert second.result("health")["pid"] == owner_pid  # answered by the owner
    staged = second.result("ingestForAgent", summary("through-the-owner"))
    assert staged["staged"]
    ended = second.wait_notification(300)  # the owner's operation event reaches this front too
    assert ended["method"] == "backgroundOperationCompleted"
    assert ended["params"]["operationId"] == staged["operationId"]
    assert owner.result("backgroundStatus", {"operationId": staged["operationId"]})["status"] == "completed"
    assert [e["topicId"] for e in owner.result("retrieveForAgent", {"query": "Redis cache"})["entries"]] == [
        "through-the-owner"
    ]
    # The rate limit belongs to the workspace: 3 per minute across both fronts.
    assert second.result("retrieveForAgent", {"query": "Redis cache"})["success"]
    assert owner.result("retrieveForAgent", {"query": "Redis cache"})["success"]
    refused = second.result("retrieveForAgent", {"query": "Redis cache"})
    assert (refused["success"], refused["error"]) == (False, "RATE_LIMIT_EXCEEDED")
    assert owner.result("health")["success"]


def _worker_parents(workspace: Path) -> set[int]:
    """The parent pid of every cognee worker child running for this workspace."""
    parents = set()
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"graph.cognify.worker" in argv and str(workspace).encode() in argv:
                parents.add(int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]))
        except (OSError, ValueError, IndexError):
            continue
    return parents


@pytest.mark.parametrize("how", ["shutdown", "kill"])
def test_a_front_takes_over_when_the_owner_leaves(spawn, workspace: Path, how: str) -> None:
    env = {**os.environ, "FLOWBABY_MAX_QUEUED": "50"}
    owner = spawn(workspace, env=env)
    owner.result("ingestForAgent", summary("before"))
    second = spawn(workspace, env=env)
    assert second.result("health")["pid"] == owner.proc.pid
    owner.close() if how == "shutdown" else owner.kill()
    staged = second.result("ingestForAgent", summary("after"))  # makes the second front the owner
    assert staged["staged"]
    assert second.result("health")["pid"] == second.proc.pid
    final = second.wait_idle(300)
    assert final["counts"].get("failed", 0) == 0
    topics = {
        e["topicId"] for e in second.result("retrieveForAgent", {"query": "Redis cache", "maxResults": 5})["entries"]
    }
    assert topics == {"before", "after"}
    assert _worker_parents(workspace) <= {second.proc.pid}  # one cognee worker, the new owner's


def test_lock_of_a_killed_owner_is_taken_over(spawn, workspace: Path) -> None:
    first = spawn(workspace)
    first.result("health")
    first.kill()
    second = spawn(workspace)
    assert second.result("health")["pid"] == second.proc.pid


def test_remote_provider_without_key_is_missing_api_key(spawn, workspace: Path) -> None:
    (workspace / ".env").write_text("LLM_PROVIDER=openai\nLLM_MODEL=gpt-4o-mini\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    env["FLOWBABY_TRUSTED_WORKSPACES"] = str(workspace)
    client = spawn(workspace, env=env)
    reply = client.result("ingestForAgent", summary())
    assert reply["success"] is False and reply["errorCode"] == "MISSING_API_KEY"
    assert client.result("health")["memories"] == 0


def test_store_memory_fills_metadata(spawn, workspace: Path) -> None:
    client = spawn(workspace, env={**os.environ, "FLOWBABY_MAX_QUEUED": "50", "FLOWBABY_BUILD_GRAPH": "0"})
    reply = client.result("storeMemory", {"topic": "Quick note", "context": "Remember the flaky test in ci/run.sh"})
    assert reply["success"] is True
    assert len(reply["summary_id"]) == 16 and int(reply["summary_id"], 16) >= 0
    assert reply["ingested_chars"] == len("Quick note") + len("Remember the flaky test in ci/run.sh")
    status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
    assert status["topicIds"] == [reply["summary_id"]]
    assert client.result("backgroundStatus", {"operationId": "op_nope"})["status"] == "unknown"


def test_backlog_refuses_the_sixth_operation(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    replies = [client.result("ingestForAgent", summary(f"topic-{i}")) for i in range(6)]
    assert all(r["success"] for r in replies[:5])
    assert replies[5] == {
        "success": False,
        "error": "Background queue full (5 graph builds max); nothing was stored. Retry in 30s, when a build "
        "has finished.",
        "errorCode": "429_FLOWBABY_BACKLOG",
        "retryAfterSec": 30,
    }
    assert client.result("health")["memories"] == 5


def test_supersession_creates_versions_and_the_briefing_lists_the_newest(spawn, workspace: Path) -> None:
    """A second ingest of a topicId is its version 2, superseding version 1; the briefing (the method
    the VS Code extension calls to keep Copilot's instructions file current) lists only the newest."""
    client = spawn(workspace, env={**os.environ, "FLOWBABY_BUILD_GRAPH": "0"})  # reads no graph
    assert client.result("briefing", {}) == {"text": "", "items": [], "tokens": 0, "memories": 0}
    first = client.result("ingestForAgent", summary())
    newer = summary(decisions=["Use Redis cache with a 30 minute TTL for session data"])
    newer["metadata"] = newer["metadata"] | {"updatedAt": "2025-03-02T10:00:00Z"}
    second = client.result("ingestForAgent", newer)
    assert first["success"] and second["success"]
    assert first["ingestion_metrics"]["version"] == 1
    assert second["ingestion_metrics"]["version"] == 2
    assert second["ingestion_metrics"]["supersededMemoryId"] == first["ingestion_metrics"]["memoryId"]
    brief = client.result("briefing", {"agentName": "VS Code language model tool", "maxTokens": 300})
    assert "30 minute TTL" in brief["text"] and "15 minute TTL" not in brief["text"]  # newest version only
    assert "[topicId redis-cache]" in brief["text"] and brief["memories"] == 1
    assert 0 < brief["tokens"] <= 300 and brief["items"][0]["topicId"] == "redis-cache"
    bad = client.result("briefing", {"maxTokens": 5})
    assert bad["errorCode"] == "INVALID_PAYLOAD" and "maxTokens" in bad["error"]
