"""Issue 50 item 7: a person corrects memory from the shell, as a user runs it, through a bridge
that owns the workspace: `flowbaby memories edit TOPIC` stores a new version (from flags, or from a
JSON object on standard input), and `flowbaby memories supersede OLDER NEWER` retires a memory that
no suggestion pairs, recording the link on it (`memories show`) and undone by `memories restore`; the
briefing lists only the current decisions. Bad input is refused with
its contract code and changes nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from bridge.client import BridgeClient
from tests.conftest import summary
from tests.support.commands import run_flowbaby


def flowbaby(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_flowbaby(*args, input=stdin)


def test_edit_makes_a_version_and_supersede_retires_a_named_memory(
    spawn: Callable[..., BridgeClient], workspace: Path
) -> None:
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    client = spawn(workspace, "--rate-limit-per-minute", "0")
    width = summary(
        "help-width", topic="Help text width", context="CLI help.", decisions=["Cap help output at 80 columns"]
    )
    wrap = summary(
        "help-wrap", topic="Help wrapping", context="CLI help.", decisions=["Wrap help text at the terminal width"]
    )
    for payload in (width, wrap):
        assert client.result("ingestForAgent", payload)["success"]
    ws = ("--workspace", str(workspace))

    edited = flowbaby("memories", "edit", "help-width", *ws, "--decision", "Cap help output at 100 columns")
    assert edited.returncode == 0, edited.stderr
    shown = client.result("getMemory", {"topicId": "help-width"})
    assert [v["status"] for v in shown["versions"]] == ["Superseded", "Active"]
    assert shown["latest"]["decisions"] == ["Cap help output at 100 columns"]
    assert shown["latest"]["context"] == "CLI help." and shown["latest"]["agentName"] == "person"

    fields = {"context": "CLI help, decided in the review.", "rationale": ["Wide terminals are the norm"]}
    piped = flowbaby("memories", "edit", "help-width", *ws, "--json", "-", stdin=json.dumps(fields))
    assert piped.returncode == 0, piped.stderr
    latest = client.result("getMemory", {"topicId": "help-width"})["latest"]
    assert (latest["version"], latest["context"], latest["rationale"]) == (3, fields["context"], fields["rationale"])
    assert latest["decisions"] == ["Cap help output at 100 columns"]

    assert client.result("listImpliedSupersessions", {})["count"] == 0  # nothing suggests this pair
    done = flowbaby("memories", "supersede", "help-wrap", "help-width", *ws)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["supersededBy"] == "help-width"
    assert client.result("getMemory", {"topicId": "help-wrap"})["latest"]["status"] == "Superseded"
    brief = client.result("briefing", {})["text"]
    assert "Cap help output at 100 columns" in brief and "Wrap help text" not in brief
    # The link is recorded on the older memory as reconcile's replace is: by whom, when, superseded by which.
    shown = json.loads(flowbaby("memories", "show", "help-wrap", *ws).stdout)
    [link] = shown["reconcile"]
    assert (link["decision"], link["decidedBy"], link["newer"]["topicId"]) == ("replace", "manual", "help-width")
    assert (
        link["superseded"] == [{"topicId": "help-wrap", "memoryId": shown["latest"]["memoryId"], "status": "Active"}]
        and link["at"]
        and link["restoredAt"] is None
    )
    # ... and undone as an automatic decision is.
    undone = flowbaby("memories", "restore", "help-wrap", *ws)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["id"] == link["id"]
    assert client.result("getMemory", {"topicId": "help-wrap"})["latest"]["status"] == "Active"
    assert client.result("getMemory", {"topicId": "help-wrap"})["reconcile"][0]["restoredAt"]
    assert "Wrap help text" in client.result("briefing", {})["text"]

    missing = flowbaby("memories", "supersede", "no-such-topic", "help-width", *ws)
    assert missing.returncode == 1 and _code(missing.stderr) == "NOT_FOUND"
    itself = flowbaby("memories", "supersede", "help-width", "help-width", *ws)
    assert itself.returncode == 1 and _code(itself.stderr) == "INVALID_PAYLOAD"
    bad = flowbaby("memories", "edit", "help-width", *ws, "--json", "-", stdin='{"context": " "}')
    assert bad.returncode == 1 and _code(bad.stderr) == "INVALID_PAYLOAD"
    unchanged = flowbaby("memories", "edit", "help-width", *ws)
    assert unchanged.returncode != 0 and "nothing to change" in unchanged.stderr
    assert client.result("getMemory", {"topicId": "help-width"})["latest"]["version"] == 3


def _code(stderr: str) -> str:
    """The errorCode of the failure body the command prints (after a line saying who owns the workspace)."""
    return str(json.loads(stderr[stderr.index("{") :])["errorCode"])
