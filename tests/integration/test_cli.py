"""The real `flowbaby` command as a new user meets it: one dialect across subcommands
(--version, --workspace defaulting to the current folder, help with defaults, typo suggestions,
text for people and --json for scripts), clear refusals (a taken port, a folder that is not a
workspace), and the next steps `install` prints."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bridge.client import PROJECT_ROOT
from graph import __version__

pytestmark = pytest.mark.slow

FLOWBABY = Path(sys.executable).parent / "flowbaby"


def flowbaby(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    home = cwd.parent  # never the real one; install refuses the home folder itself as a workspace
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".c")}
    # The model's ONNX export is cached per user (graph.search.onnx_export): keep the real cache, or
    # every command that loads the model exports it again into this HOME (~30 s of CPU each).
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return subprocess.run(
        [str(FLOWBABY), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_version_help_defaults_and_suggestions(tmp_path: Path) -> None:
    version = flowbaby("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"flowbaby {__version__}"

    helped = flowbaby("serve", "--help", cwd=tmp_path)
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "(default: 8766)" in text and "(default: 127.0.0.1)" in text
    assert "--workspace WORKSPACE workspace folder" in text and "(default: the current folder)" in text

    typo = flowbaby("serve", "--worksapce", ".", cwd=tmp_path)
    assert typo.returncode == 2
    assert "did you mean --workspace for --worksapce?" in typo.stderr
    assert "usage: flowbaby serve" in typo.stderr  # the subcommand's usage, not the top level's
    unknown = flowbaby("graph", "stats", "--no-such-thing-at-all", cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean" not in unknown.stderr


def test_graph_outside_a_workspace_says_so(tmp_path: Path) -> None:
    for command in (["graph", "stats"], ["graph", "stats", "--json"], ["graph", "export"]):
        answer = flowbaby(*command, cwd=tmp_path)
        assert answer.returncode == 3, answer
        assert f"{tmp_path} is not a flowbaby workspace" in answer.stderr
        assert answer.stdout == ""
    assert not (tmp_path / ".flowbaby").exists()  # looking writes nothing


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_defaults_to_the_folder_and_a_taken_port_is_refused_first(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    log = (tmp_path / "serve.stderr").open("wb")
    first = subprocess.Popen(
        [str(FLOWBABY), "serve", "--port", str(port)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=log
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert first.poll() is None, (tmp_path / "serve.stderr").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.3)
        token = (tmp_path / ".flowbaby" / "api_token").read_text().strip()  # the current folder's workspace
        health = httpx.get(f"http://127.0.0.1:{port}/api/health", headers={"Authorization": f"Bearer {token}"})
        assert health.json()["workspace"] == str(tmp_path)

        other = tmp_path / "other"
        other.mkdir()
        second = flowbaby("serve", "--port", str(port), cwd=other)
        assert second.returncode == 4, second
        assert "flowbaby API on" not in second.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in second.stderr and "--port" in second.stderr
        assert not (other / ".flowbaby").exists()  # refused before the workspace was opened
    finally:
        first.terminate()
        first.wait(60)
        log.close()


def test_bridge_and_mcp_default_to_the_folder(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "health"}) + "\n"
    shutdown = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + "\n"
    bridge = subprocess.run(
        [str(FLOWBABY), "bridge"], cwd=tmp_path, env=env, input=request + shutdown, capture_output=True, text=True
    )
    replies = {reply["id"]: reply for reply in map(json.loads, bridge.stdout.splitlines())}
    assert replies[1]["result"]["workspace"] == str(tmp_path), bridge.stderr

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    call = {"name": "flowbaby_indexStatus", "arguments": {}}
    lines.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    folder = tmp_path / "mcp-folder"
    folder.mkdir()
    mcp = subprocess.Popen([str(FLOWBABY), "mcp"], cwd=folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert mcp.stdin and mcp.stdout
    mcp.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
    mcp.stdin.flush()
    answers = [json.loads(mcp.stdout.readline()) for _ in range(2)]
    mcp.stdin.close()
    mcp.wait(60)
    assert answers[1]["id"] == 2 and not answers[1]["result"]["isError"], answers
    assert (folder / ".flowbaby" / "memories.sqlite").is_file()  # the folder it was started in


def test_sessions_search_takes_the_query_and_prints_text_or_json(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    searched = flowbaby("sessions", "search", "why did the tests fail", cwd=project)
    assert searched.returncode == 0, searched.stderr
    assert searched.stdout.strip().endswith("0 results in 0 sessions")  # text, for people
    as_json = flowbaby("sessions", "search", "why did the tests fail", "--json", cwd=project)
    assert json.loads(as_json.stdout)["count"] == 0
    listed = flowbaby("sessions", "list", cwd=project)
    assert listed.returncode == 0 and listed.stdout.strip() == "no sessions of this workspace were found"
    assert json.loads(flowbaby("sessions", "list", "--json", cwd=project).stdout)["sessions"] == []
    empty = json.loads(flowbaby("sessions", "search", "ingress", "--abstain", "--json", cwd=project).stdout)
    assert empty["count"] == 0 and "abstained" not in empty  # nothing to match is not an abstention
    missing = flowbaby("sessions", "search", "x", "--session", "nope", cwd=project)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("flowbaby sessions search: NOT_FOUND: ")
    no_query = flowbaby("sessions", "search", cwd=project)
    assert no_query.returncode == 2 and "query" in no_query.stderr


def test_install_prints_next_steps_and_allows_tools_only_when_asked(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    plain = flowbaby("install", "--client", "claude-code", cwd=project)
    assert plain.returncode == 0, plain.stderr
    assert "Next steps for Claude Code:" in plain.stdout and "approve the project MCP server" in plain.stdout
    assert "--allow-tools" in plain.stdout
    hooks_only = json.loads((project / ".claude" / "settings.json").read_text())  # the hooks, no allow rule
    assert hooks_only["hooks"] and "permissions" not in hooks_only

    allowed = flowbaby("install", "--client", "claude-code", "--allow-tools", cwd=project)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"]["allow"] == ["mcp__flowbaby__*"]
    assert "are allowed without a prompt" in allowed.stdout
    flowbaby("install", "--client", "claude-code", "--allow-tools", cwd=project)  # idempotent
    assert json.loads((project / ".claude" / "settings.json").read_text()) == settings

    removed = flowbaby("uninstall", "--client", "claude-code", cwd=project)
    assert removed.returncode == 0
    assert json.loads((project / ".claude" / "settings.json").read_text())["permissions"]["allow"] == []

    for client, phrase in (("opencode", "Start `opencode`"), ("cursor", "Cursor Settings"), ("vscode", "MCP: List")):
        other = flowbaby("install", "--client", client, cwd=project)
        assert other.returncode == 0 and "Next steps for " in other.stdout and phrase in other.stdout
    refused = flowbaby("install", "--client", "opencode", "--allow-tools", cwd=project)
    assert refused.returncode == 2 and "--allow-tools is for claude-code only" in refused.stderr
