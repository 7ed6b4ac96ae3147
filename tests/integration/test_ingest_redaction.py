"""Redaction at ingest over the real route: bridge → store, and the cognee worker → litellm → a
loopback OpenAI-compatible server. A memory holding an API key and a database URL with a password
is stored redacted, and neither secret is in any request the LLM server received."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import summary
from tests.integration.test_llm_provider import _guarded_env, _no_remote_connections, _use_server
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow

KEY = "sk-proj-4fJ9xQ2mZ7vB1nK8rT3wY6uE"
PASSWORD = "hunter2Secret9"
URL = f"postgresql://billing:{PASSWORD}@db.internal:5432/ledger"


def test_secrets_are_stored_redacted_and_never_reach_the_llm(spawn, workspace: Path, tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        _use_server(workspace, server)
        client = spawn(workspace, env=_guarded_env(tmp_path))
        payload = summary(
            "leaky",
            context=f"The billing job connects with {URL} and calls the model with key {KEY} from the vault.",
            decisions=[f"Rotate {KEY} monthly"],
        )
        reply = client.result("ingestForAgent", payload)
        assert reply["success"] and reply["redacted"] == 3, reply
        client.wait_idle(300)
        stored = client.result("getMemory", {"topicId": "leaky"})["latest"]
        client.close()
    assert KEY not in json.dumps(stored) and PASSWORD not in json.dumps(stored)
    assert "postgresql://billing:[redacted]@db.internal:5432/ledger" in stored["context"]
    assert stored["decisions"] == ["Rotate [redacted] monthly"]
    sent = "\n".join(server.bodies)
    assert server.bodies and "[redacted]" in sent  # the memory reached the LLM, redacted
    assert KEY not in sent and PASSWORD not in sent
    audit = [json.loads(line) for line in (workspace / ".flowbaby" / "agent_audit.log").read_text().splitlines()]
    assert [e["redacted"] for e in audit if e["command"] == "ingestForAgent"] == [3]
    data = workspace / ".flowbaby"
    assert not [p for p in data.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    _no_remote_connections(tmp_path)
