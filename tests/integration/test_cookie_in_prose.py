"""A `Cookie:` header quoted inside a sentence of a session (issue 58), through the real capture path: the real
Claude Code Stop hook command asks the bridge that owns the workspace to capture, its LLM a loopback fake that
echoes what it was sent. The cookie's value reaches neither the LLM request nor the stored memory."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

from flowbaby.hook_install import hook_command
from graph.capture.session_capture import topic_id_for
from tests.integration.test_llm_provider import _guarded_env, _no_remote_connections
from tests.integration.test_session_secrets import _echo, fake  # noqa: F401  (the fake LLM's fixture)
from tests.support.fake_openai import FakeOpenAI
from tests.unit.capture.test_hook_capture import Transcript

SESSION = "Zq8Lm3Rt6Ws1Xv4Bn7"
CSRF = "Cs2Df5Gh8Jk1Lm4Np7"
TURN = (
    f"We decided the smoke test sends Cookie: sessionid={SESSION}; csrftoken={CSRF} to staging before each deploy. "
    f"Let's also note that the nightly job sets cookie: sid={SESSION}, then retries."
)


def test_a_cookie_quoted_in_a_sentence_is_neither_sent_nor_stored(
    spawn,
    workspace: Path,
    tmp_path: Path,
    fake: FakeOpenAI,  # noqa: F811
) -> None:
    (workspace / ".env").write_text(f"LLM_PROVIDER=custom\nLLM_MODEL=fake-echo\nLLM_ENDPOINT={fake.url}\n")
    fake.reply_for = _echo
    env = _guarded_env(tmp_path, FLOWBABY_BUILD_GRAPH="0")
    client = spawn(workspace, env=env)
    assert client.result("health")["llm"] == "custom"
    talk = Transcript(tmp_path / "claude", workspace, session="cookie")
    talk.add("user", TURN)
    talk.add("assistant", "Noted.")
    payload = {"session_id": "cookie", "transcript_path": str(talk.path), "cwd": str(workspace)}
    done = subprocess.run(
        shlex.split(hook_command("Stop", workspace, "claude-code")),
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    deadline = time.monotonic() + 90
    while not (memory := client.result("getMemory", {"topicId": topic_id_for("claude-code", "cookie")}))["success"]:
        assert time.monotonic() < deadline, memory
        time.sleep(0.5)
    stored, sent = json.dumps(memory["latest"]), fake.bodies[0]
    assert "smoke test sends Cookie: [redacted] to staging" in sent, sent  # the sentence went, without its value
    for secret in (SESSION, CSRF):
        assert secret not in sent and secret not in stored, (sent, stored)
    assert client.close() == 0
    _no_remote_connections(tmp_path)
