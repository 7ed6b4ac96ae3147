"""The memory browser shows which store holds each memory (issue 49, docs/contract/21-user-scope.md), in
headless chromium against the `flowbaby serve` that `flowbaby ui` starts: a preference stored with
`flowbaby memories add --scope user` and a project decision are both listed, each marked; the scope filter
narrows the list to the person's own; the user memory's page (reached from the list) is read from the user
store and says so; search marks it too. axe-core reports nothing serious on the list."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.browser_driver import drive, flowbaby_ui, require_driver, stop_serve
from tests.support.commands import run_flowbaby
from tests.support.vscode_tools import chromium

pytestmark = pytest.mark.slow

PREFERENCE = ("Python package manager", "Use uv for every Python package, never pip")
DECISION = ("Session cache", "Keep the session cache in Redis with a 15 minute TTL")


def test_the_browser_marks_and_filters_the_scope(tmp_path: Path) -> None:
    require_driver()
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_SESSIONS_WATCH": "0"}
    env["FLOWBABY_USER_STORE"] = str(tmp_path / "user")
    for (topic, decision), scope in ((PREFERENCE, "user"), (DECISION, "project")):
        add = ("memories", "add", "--workspace", str(root), "--scope", scope, "--topic", topic)
        done = run_flowbaby(*add, "--context", f"{decision}.", "--decision", decision, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
    try:
        ui = flowbaby_ui(root, env, "--no-open", timeout=300)
        link = ui.stdout.strip().splitlines()[-1]
        config = {"chromium": chromium(), "link": link, "base": link.split("/ui/")[0], "query": "package manager uv"}
        seen = drive("scope.js", config, tmp_path)
    finally:
        stop_serve(root)
    assert {(r["topic"], r["scope"]) for r in seen["both"]} == {(PREFERENCE[0], "yours"), (DECISION[0], "project")}
    assert [value for value, _, _ in seen["filter"]] == ["all", "project", "user"] and seen["filter"][0][2]
    assert [(r["topic"], r["scope"]) for r in seen["user"]] == [(PREFERENCE[0], "yours")]
    assert seen["user"][0]["href"].endswith("?scope=user")
    assert seen["page"] == {"title": PREFERENCE[0], "mark": "yours"}
    assert (PREFERENCE[0], "yours") in {(r["topic"], r["scope"]) for r in seen["search"]}, seen["search"]
    assert not [v for v in seen["axe"]["list"] if v["impact"] in ("serious", "critical")], seen["axe"]
    assert not seen["console"], seen["console"]
    print(json.dumps({k: seen[k] for k in ("both", "user", "page")}))
