"""Issue 45 item 8, through real processes: secrets of the shapes an agent session meets (a command's
password flag, `mysql -pX`, Docker's auth, cookies, `.netrc` and `.pgpass` lines, a password said in
prose) reach neither the capture's LLM request nor the memory it stores, and `<private>` spans
reach no session chunk, search answer or stored byte, on the embedded and the team backend.

Capture: a real bridge owns the workspace, its LLM is a loopback fake (tests/support/fake_openai.py)
that echoes the transcript it was sent back as the summary, and the real Claude Code hook command
(`python -S flowbaby/hook.py Stop`) asks the owner to capture."""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flowbaby.hook_install import hook_command
from graph.capture.session_capture import topic_id_for
from tests.integration.test_forget_canary import files_holding, namespace_rows_holding
from tests.integration.test_llm_provider import _guarded_env, _no_remote_connections
from tests.support.fake_openai import FakeOpenAI
from tests.support.postgres import PostgresServer
from tests.support.session_fixtures import OpenCodeDb, text, tool
from tests.unit.capture.test_hook_capture import Transcript

SECRETS = {
    "flag": "Vq7mZr2Lk9Tx",
    "mysql": "Hp4wQz8Nc2Rd",
    "docker": "Dk3sWn6Ym1Fa",
    "cookie": "ck9Qz4Lm7Rt2Ws5Xv8Bn3Jh6",
    "netrc": "Nr5tQp8Zx2Wm",
    "pgpass": "Pg7vLc3Ks9Qd",
    "prose": "Ss4dGh7Jk2Lq",
}
DOCKER_AUTH = base64.b64encode(f"ci-bot:{SECRETS['docker']}".encode()).decode()
TURN = (
    "Let's seed the orders database from the replica. "
    f"Run `pg_dump --host replica.internal --username app --password {SECRETS['flag']} orders` first, "
    f"then `mysql -h legacy.internal -u root -p{SECRETS['mysql']} orders < seed.sql`.\n"
    f'The registry login is in ~/.docker/config.json: {{"auths": {{"ghcr.io": {{"auth": "{DOCKER_AUTH}"}}}}}}\n'
    f"Cookie: sessionid={SECRETS['cookie']}; csrftoken=abc\n"
    f"machine api.internal login deploy password {SECRETS['netrc']}\n"
    f"replica.internal:5432:orders:app:{SECRETS['pgpass']}\n"
    f"For the staging box the password is {SECRETS['prose']}. We will rotate it after the demo."
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _echo(system: str, user: str) -> str:
    """A model that repeats what it was sent: whatever the request held ends up in the memory."""
    lines = [line for line in user.splitlines() if line.strip()]
    return json.dumps(
        {
            "topic": "Seeding the orders database",
            "context": user[:1400],
            "decisions": lines[:20],
            "rationale": [],
            "openQuestions": [],
            "nextSteps": [],
            "references": [],
        }
    )


def test_capture_sends_and_stores_no_secret_of_a_session(spawn, workspace: Path, tmp_path: Path, fake: FakeOpenAI):
    (workspace / ".env").write_text(f"LLM_PROVIDER=custom\nLLM_MODEL=fake-echo\nLLM_ENDPOINT={fake.url}\n")
    fake.reply_for = _echo
    env = _guarded_env(tmp_path, FLOWBABY_BUILD_GRAPH="0")  # the graph's LLM calls are not this test's
    client = spawn(workspace, env=env)
    assert client.result("health")["llm"] == "custom"
    talk = Transcript(tmp_path / "claude", workspace, session="seed")
    talk.add("user", TURN)
    talk.add("assistant", "Seeding now.", edit=str(workspace / "db" / "seed.sql"))
    payload = {"session_id": "seed", "transcript_path": str(talk.path), "cwd": str(workspace)}
    done = subprocess.run(
        shlex.split(hook_command("Stop", workspace, "claude-code")),
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == b"", done.stderr[-2000:]
    deadline = time.monotonic() + 90  # the hook waits a few seconds; the owner's first LLM capture imports litellm
    while not (memory := client.result("getMemory", {"topicId": topic_id_for("claude-code", "seed")}))["success"]:
        assert time.monotonic() < deadline, memory
        time.sleep(0.5)
    stored = json.dumps(memory["latest"])
    assert fake.calls() == 1, fake.requests
    sent = fake.bodies[0]
    assert "pg_dump --host replica.internal" in sent and "replica.internal" in stored  # the turn went, and came back
    leaked = {name for name, secret in SECRETS.items() if secret in sent or secret in stored}
    leaked |= {"docker"} if DOCKER_AUTH in sent or DOCKER_AUTH in stored else set()
    assert not leaked, (leaked, sent, stored)
    assert client.close() == 0
    _no_remote_connections(tmp_path)


PRIVATE = "zqxprivate7731 the vault pin is 90417"
"""A unique word (BM25 finds it) and a sentence the user marked private."""


def _private_session(folder: Path, workspace: Path, sid: str) -> tuple[OpenCodeDb, dict[str, str]]:
    db = OpenCodeDb(folder)
    db.session(sid, workspace, f"Canary placement <private>{PRIVATE}</private>")
    db.turn(sid, "user", text(f"Which region should the payments canary run in? <private>{PRIVATE}</private>"))
    db.turn(sid, "assistant", text("Put the canary in eu-west-3: it has the lowest card-network latency."))
    db.turn(
        sid,
        "assistant",
        text("Checked."),
        tool("bash", f"cat notes.md  # <private>{PRIVATE}</private>", f"notes: <private>{PRIVATE}</private> done"),
    )
    db.turn(sid, "user", text(f"Keep this to yourself: <PRIVATE>{PRIVATE}"))  # unclosed: dropped to the end
    return db, {
        "FLOWBABY_SESSIONS_OPENCODE_DIR": str(folder),
        "FLOWBABY_SESSIONS_CLAUDE_CODE": "0",
        "FLOWBABY_SESSIONS_WATCH": "0",
    }


def _search_serves_no_private_text(client: Any, sid: str) -> None:
    imported = client.result("sessionsImport", {"session_id": sid}, timeout=180)
    assert imported["index_status"]["status"] == "ready", imported
    hits = client.result("sessionsSearch", {"session_id": sid, "q": "lowest card network latency", "limit": 5})
    assert "eu-west-3" in hits["results"][0]["chunk_text"], hits  # the session is indexed and served
    answers = [
        imported,
        hits,
        client.result("sessionsSearch", {"session_id": sid, "q": "zqxprivate7731 vault pin", "limit": 10}),
        client.result("sessionsContext", {"session_id": sid, "q": "vault pin 90417", "context_turns": 3})["results"],
        client.result("sessionsList", {}),
    ]
    served = json.dumps(answers).lower()
    assert "zqxprivate7731" not in served and "vault pin" not in served, served


def test_session_search_never_indexes_private_spans(spawn, workspace: Path, tmp_path: Path) -> None:
    db, sessions = _private_session(tmp_path / "opencode", workspace, "ses_private")
    client = spawn(workspace, env={**_guarded_env(tmp_path), **sessions, "FLOWBABY_BUILD_GRAPH": "0"})
    _search_serves_no_private_text(client, "ses_private")
    assert client.close() == 0
    db.close()
    stored = workspace / ".flowbaby" / "sessions"
    assert (stored / "index.sqlite").exists()
    assert files_holding(workspace / ".flowbaby", b"zqxprivate7731") == []


@pytest.mark.postgres
def test_team_session_search_never_indexes_private_spans(spawn, postgres: PostgresServer, tmp_path: Path) -> None:
    from graph.backends.team.schema import schema_name
    from tests.integration.test_team_backend import _env

    namespace = f"priv{uuid.uuid4().hex[:8]}"
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    db, sessions = _private_session(tmp_path / "opencode", laptop, "ses_team_private")
    client = spawn(laptop, env=_env(postgres.url(), namespace) | sessions)
    _search_serves_no_private_text(client, "ses_team_private")
    assert client.close() == 0
    db.close()
    with psycopg.connect(postgres.url()) as conn:
        rows = conn.execute(f'SELECT count(*) FROM "{schema_name(namespace)}".session_chunks'.encode()).fetchone()
    assert rows is not None and rows[0] >= 2
    assert namespace_rows_holding(postgres.url(), [schema_name(namespace)], "zqxprivate7731") == []
