"""The user scope (issue 49) from the command line and the bridge: a preference stored in one project
with `--scope user` is listed, shown and retrieved in another, each memory saying its scope; and two
projects' owners write to the one user store at once without losing or damaging a memory."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.integration.test_forget_canary import files_holding
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.integration.test_team_clients import TOKEN, _client_env, _token_file
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

PREFERENCE = "Use uv for every Python package, never pip"
KEY = "sk-proj-4fJ9xQ2mZ7vB1nK8rT3wY6uE"
"""A secret a user memory must lose at write, as a project memory does (section 8.1)."""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {
        **os.environ,
        "FLOWBABY_USER_STORE": str(tmp_path / "data" / "flowbaby" / "user"),
        "FLOWBABY_BUILD_GRAPH": "0",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    return a, b, env


def flowbaby(env: dict[str, str], *args: str) -> Any:
    done = run_flowbaby(*args, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_list_show_and_retrieve_across_projects(setup: tuple[Path, Path, dict[str, str]]) -> None:
    """Stored from project A's command line (which then exits), read in project B, whose bridge owns B:
    the commands on B go through it, and it reaches the user store for them."""
    a, b, env = setup
    stored = flowbaby(
        env,
        *("memories", "add", "--workspace", str(a), "--scope", "user", "--topic", "Python package manager"),
        *("--context", "I always install Python packages with uv.", "--decision", PREFERENCE),
    )
    assert stored["scope"] == "user"
    store = Path(env["FLOWBABY_USER_STORE"])
    assert (store / ".flowbaby" / "memories.sqlite").is_file() and (store.stat().st_mode & 0o077) == 0

    def listed(scope: str) -> dict[str, str]:
        reply = flowbaby(env, "memories", "list", "--workspace", str(b), "--json", "--scope", scope)
        return {m["topicId"]: m["scope"] for m in reply["memories"]}

    with BridgeClient(b, env=env) as bridge:
        ws = ("--workspace", str(b))
        own = flowbaby(env, "memories", "add", *ws, "--topic", "Logging", "--context", "JSON logs.")
        assert own["scope"] == "project"
        secret = flowbaby(
            env,
            *("memories", "add", *ws, "--scope", "user", "--topic", "My API key", "--topic-id", "scratch-key"),
            *("--context", f"I keep {KEY} for scratch experiments."),
        )
        assert secret["scope"] == "user" and secret["redacted"] == 1
        assert listed("user") == {stored["summary_id"]: "user", "scratch-key": "user"}
        assert listed("project") == {own["summary_id"]: "project"}
        assert listed("all") == {stored["summary_id"]: "user", "scratch-key": "user", own["summary_id"]: "project"}
        table = run_flowbaby("memories", "list", *ws, "--scope", "all", env=env).stdout
        assert "user    Active" in table and "project Active" in table
        shown = flowbaby(env, "memories", "show", stored["summary_id"], *ws)
        assert shown["scope"] == "user" and shown["latest"]["decisions"] == [PREFERENCE]

        out = store.parent / "user.jsonl"
        assert run_flowbaby("export", *ws, "--scope", "user", "--out", str(out), env=env).returncode == 0
        exported = out.read_text()
        assert PREFERENCE in exported and KEY not in exported and "Logging" not in exported
        assert flowbaby(env, "memories", "forget", "scratch-key", *ws, "--scope", "user", "--yes")["versions"] == 1
        assert listed("user") == {stored["summary_id"]: "user"}
        assert flowbaby(env, "import", str(out), *ws, "--scope", "user")["imported"] == 1
        assert listed("user") == {stored["summary_id"]: "user", "scratch-key": "user"}

        query = "which tool installs python packages"
        found = bridge.result("retrieveForAgent", {"query": query, "maxResults": 5})
        scopes = {entry["topicId"]: entry["scope"] for entry in found["entries"]}
        assert scopes.get(stored["summary_id"]) == "user", found
        assert all(
            entry["scope"] == "project" for entry in found["entries"] if entry["topicId"] != stored["summary_id"]
        )
        only = bridge.result("retrieveForAgent", {"query": query, "scope": "project"})
        assert stored["summary_id"] not in {entry["topicId"] for entry in only["entries"]}
        bad = bridge.result("listMemories", {"scope": "everyone"})
        assert bad["errorCode"] == "INVALID_PAYLOAD" and bad["fields"] == ["scope"], bad
        bad = bridge.result("retrieveForAgent", {"query": query, "scope": "everyone"})
        assert bad["errorCode"] == "INVALID_REQUEST" and bad["fields"] == ["scope"], bad
    assert KEY.encode() not in b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())


def test_two_projects_owners_share_the_user_store(setup: tuple[Path, Path, dict[str, str]]) -> None:
    """Both bridges own their project; the first to need the user store owns it, the other works through
    it; all writes land, and the store stays sound; when the owner leaves, the other takes it over."""
    a, b, env = setup
    per_project = 12
    failures: list[BaseException] = []
    bridges = {name: BridgeClient(root, env=env) for name, root in (("a", a), ("b", b))}
    try:

        def write(name: str) -> None:
            try:
                for i in range(per_project):
                    reply = bridges[name].result(
                        "storeMemory",
                        {
                            "topic": f"Habit {name}{i}",
                            "context": f"Working habit number {i} noted in project {name}: zq{name}{i}habit.",
                            "metadata": {"topicId": f"habit-{name}-{i}"},
                            "scope": "user",
                        },
                    )
                    assert reply["success"] and reply["scope"] == "user", reply
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=write, args=(name,)) for name in bridges]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures
        expected = {f"habit-{n}-{i}" for n in bridges for i in range(per_project)}
        for bridge in bridges.values():
            page = bridge.result("listMemories", {"scope": "user", "limit": 100})
            assert {m["topicId"] for m in page["memories"]} == expected
        owner = json.loads((Path(env["FLOWBABY_USER_STORE"]) / ".flowbaby" / "owner.json").read_text())["pid"]
        first, second = ("a", "b") if owner == bridges["a"].proc.pid else ("b", "a")
        assert owner == bridges[first].proc.pid
        assert bridges[first].close() == 0
        reply = bridges[second].result("storeMemory", {"topic": "Late habit", "context": "After.", "scope": "user"})
        assert reply["success"]
        page = bridges[second].result("listMemories", {"scope": "user", "limit": 100})
        assert len(page["memories"]) == len(expected) + 1
    finally:
        for bridge in bridges.values():
            if bridge.proc.poll() is None:
                bridge.close()
    db = Path(env["FLOWBABY_USER_STORE"]) / ".flowbaby" / "memories.sqlite"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == len(expected) + 1


def test_a_team_server_never_receives_user_memories(spawn, serve, tmp_path: Path) -> None:  # noqa: F811
    """A laptop's bridge on a workspace served by a team server refuses `scope: "user"` itself, before
    sending: the server stores nothing and no user store is made on either side."""
    team = tmp_path / "team"
    team.mkdir()
    server_store, laptop_store = tmp_path / "server-user", tmp_path / "laptop-user"
    # The server builds no graph: the test reads the memories it stored, not their graph (no cognee worker).
    no_graph = {"FLOWBABY_API_TOKEN": TOKEN, "FLOWBABY_USER_STORE": str(server_store), "FLOWBABY_BUILD_GRAPH": "0"}
    server = serve(team, env=no_graph)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    env = {**_client_env(server.url, _token_file(tmp_path)), "FLOWBABY_USER_STORE": str(laptop_store)}
    client = spawn(laptop, env=env)
    preference = {"topic": "Python packages", "context": f"{PREFERENCE}.", "scope": "user"}
    for method in ("storeMemory", "ingestForAgent"):
        refused = client.result(method, preference)
        assert refused["errorCode"] == "INVALID_PAYLOAD" and refused["fields"] == ["scope"], refused
    assert client.result("listMemories", {"scope": "user"})["errorCode"] == "INVALID_PAYLOAD"
    assert client.result("storeMemory", {"topic": "Billing retries", "context": "Retry twice."})["success"]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    listed = httpx.get(f"{server.url}/api/agent/memories", headers=headers, timeout=30).json()["memories"]
    assert [m["topic"] for m in listed] == ["Billing retries"] and listed[0]["scope"] == "project"
    audit = (team / ".flowbaby" / "agent_audit.log").read_text()
    assert "Python packages" not in audit and PREFERENCE not in audit
    assert not server_store.exists() and not laptop_store.exists()


def test_an_agent_stores_a_preference_over_mcp(setup: tuple[Path, Path, dict[str, str]]) -> None:
    """flowbaby_storeMemory's `scope` (its schema offers it): the agent's user memory is a proposal (issue 58
    item 4), which getMemory shows in the user's store and retrieval leaves out until the person accepts it;
    a wrong scope is the contract's INVALID_PAYLOAD."""
    a, _, env = setup

    async def session() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(a)],
            env=env,
            cwd="/",
        )
        async with Client(params, client_info=Implementation(name="probe-agent", version="1.0")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools["flowbaby_storeMemory"].input_schema["properties"]["scope"]["enum"] == ["project", "user"]
            preference = {
                "topic": "Python packages",
                "context": "I install Python packages with uv.",
                "decisions": [PREFERENCE],
            }
            stored = await client.call_tool("flowbaby_storeMemory", {**preference, "scope": "user"})
            assert not stored.is_error and stored.structured_content is not None
            assert stored.structured_content["scope"] == "user"
            topic_id = stored.structured_content["summary_id"]
            operation = stored.structured_content["operationId"]
            status = await client.call_tool("flowbaby_backgroundStatus", {"operationId": operation})
            assert status.structured_content["status"] != "unknown", status  # type: ignore[index]
            assert "flowbaby memories accept" in stored.structured_content["proposed"]
            found = await client.call_tool("flowbaby_retrieveMemory", {"query": "how do I install python packages"})
            assert topic_id not in found.content[0].text  # type: ignore[union-attr]
            shown = await client.call_tool("flowbaby_getMemory", {"topicIds": [topic_id]})
            assert "user scope (your own memory, every project)" in shown.content[0].text  # type: ignore[union-attr]
            wrong = await client.call_tool("flowbaby_storeMemory", {**preference, "scope": "team"})
            assert wrong.is_error

    asyncio.run(session())
    assert (
        not (a / ".flowbaby" / "memories.sqlite").exists()
        or PREFERENCE.encode() not in (a / ".flowbaby" / "memories.sqlite").read_bytes()
    )


def test_the_http_api_names_the_scope(serve, setup: tuple[Path, Path, dict[str, str]]) -> None:  # noqa: F811
    """The routes the memory browser and the VS Code extension call: store, list, show, retrieve and forget
    with `scope` (each reply's models carry it, so the routes' response validation passes). With the bearer
    token the caller is an agent: its user-scope memory is a proposal, which retrieval leaves out."""
    _, b, env = setup
    server = serve(
        b, "--rate-limit-per-minute", "0", env={k: env[k] for k in ("FLOWBABY_USER_STORE", "FLOWBABY_BUILD_GRAPH")}
    )
    headers = {"Authorization": f"Bearer {(b / '.flowbaby' / 'api_token').read_text().strip()}"}

    def call(method: str, path: str, **kwargs: Any) -> Any:
        reply = httpx.request(method, f"{server.url}{path}", headers=headers, timeout=60, **kwargs)
        assert reply.status_code < 300, reply.text
        return reply.json()

    mine = call(
        "POST", "/api/agent/memories", json={"topic": "Commits", "context": "Imperative mood.", "scope": "user"}
    )
    ours = call("POST", "/api/agent/memories", json={"topic": "Logging", "context": "JSON lines to stdout."})
    assert (mine["scope"], ours["scope"]) == ("user", "project")
    listed = call("GET", "/api/agent/memories", params={"scope": "all"})["memories"]
    assert {m["topicId"]: m["scope"] for m in listed} == {mine["summary_id"]: "user", ours["summary_id"]: "project"}
    shown = call("GET", f"/api/agent/memories/{mine['summary_id']}", params={"scope": "user"})
    assert shown["scope"] == "user" and shown["latest"]["topic"] == "Commits"
    assert (shown["latest"]["status"], shown["latest"]["writtenBy"]) == ("Proposed", "agent")
    around = call("GET", f"/api/agent/memories/{mine['summary_id']}/context")  # the memory page, by its topicId
    assert around["memory"]["topic"] == "Commits"
    found = call("POST", "/api/agent/retrieve", json={"query": "commit message mood", "maxResults": 5})
    assert mine["summary_id"] not in {e["topicId"] for e in found["entries"]}, found
    gone = call("DELETE", f"/api/agent/memories/{mine['summary_id']}", params={"scope": "user"})
    assert gone["scope"] == "user" and gone["versions"] == 1
    assert call("GET", "/api/agent/memories", params={"scope": "user"})["memories"] == []


def test_a_forgotten_user_memory_leaves_no_byte_in_the_user_store(tmp_path: Path) -> None:
    """The forget canary (tests/integration/test_forget_canary.py) on the user store, its graph built by
    the real cognee worker: after the forget, no file under the user store holds the canary."""
    canary = "zqxuserscope5521"
    project = tmp_path / "project"
    project.mkdir()
    store = tmp_path / "user"
    env = {**os.environ, "FLOWBABY_USER_STORE": str(store), "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("FLOWBABY_BUILD_GRAPH", None)
    with BridgeClient(project, env=env) as bridge:
        stored = bridge.result(
            "storeMemory",
            {
                "topic": "Shell habits",
                "context": f"I alias {canary} to my release script in every project.",
                "decisions": [f"Keep the {canary} alias"],
                "scope": "user",
            },
        )
        assert stored["scope"] == "user"
        deadline = time.monotonic() + 300
        while bridge.result("listMemories", {"scope": "user"})["memories"][0]["graphState"] != "indexed":
            assert time.monotonic() < deadline, "the user store's graph was never built"
            time.sleep(0.5)
        held = files_holding(store, canary.encode())
        assert any("cognee/" in path for path in held) and any("memories.sqlite" in path for path in held), held
        gone = bridge.result("forgetMemory", {"topicId": stored["summary_id"], "scope": "user"}, timeout=120)
        assert gone["scope"] == "user" and gone["versions"] == 1 and gone["pending"] == [], gone
    assert files_holding(store, canary.encode()) == []
    assert files_holding(project / ".flowbaby", canary.encode()) == []
