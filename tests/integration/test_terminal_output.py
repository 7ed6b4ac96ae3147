"""Memory text reaches the terminal as text to read, never as escape sequences (issue 58 item 12): the real
command line stores a memory whose topic, context and decision hold an OSC 52 clipboard write, a title set,
line erasing, concealment, an 8-bit CSI, a DCS, bidi overrides and isolates and zero-width characters; then
`memories list`, `memories show`, `search` and `status` print none of those characters, on stdout or
stderr, and `--json` decodes to the exact text stored."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
TITLE = "\x1b]0;owned\x1b\\"
ERASE = "\x1b[2K\x1b[1A\r"
CONCEAL = "\x1b[8m"
CSI8 = "\x9b31m"
DCS = "\x1bP1$r\x1b\\"
BIDI = "\u202eevil\u202c \u2066iso\u2069 zero\u200bwidth\ufeff"
TOPIC = f"Ledger {TITLE}export {BIDI}"
DECISION = f"Export the ledger every 15 minutes {CLIPBOARD}{ERASE}{CONCEAL}hidden{CSI8} {DCS}done"
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _clean(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(text)})
    assert not found, f"raw controls reached the terminal: {found}\n{text!r}"


def test_memory_text_is_neutralised_in_every_human_output(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_USER_STORE": str(tmp_path / "user")}
    where = ["--workspace", str(workspace)]
    added = run_flowbaby(
        "memories",
        "add",
        "--topic",
        TOPIC,
        "--context",
        f"Why {CONCEAL}{BIDI}",
        "--decision",
        DECISION,
        *where,
        env=env,
    )
    assert added.returncode == 0, added.stderr
    _clean(added.stdout + added.stderr)

    listed = run_flowbaby("memories", "list", "--json", *where, env=env)
    assert listed.returncode == 0, listed.stderr
    [memory] = json.loads(listed.stdout)["memories"]
    assert memory["topic"] == TOPIC, "--json decodes to the exact text"
    _clean(listed.stdout + listed.stderr)

    shown = run_flowbaby("memories", "show", memory["topicId"], *where, env=env)
    assert shown.returncode == 0, shown.stderr
    _clean(shown.stdout + shown.stderr)
    assert "15 minutes \\u001b]52;c;" in shown.stdout, shown.stdout

    for command in (["memories", "list"], ["search", "how often is the ledger exported"], ["status"]):
        done = run_flowbaby(*command, *where, env=env)
        assert done.returncode == 0, (command, done.stderr)
        _clean(done.stdout + done.stderr)
        if command[0] != "status":
            assert "\\u001b]" in done.stdout and "\\u202eevil" in done.stdout, done.stdout  # shown, not run

    found = run_flowbaby("search", "how often is the ledger exported", "--json", *where, env=env)
    assert found.returncode == 0, found.stderr
    _clean(found.stdout + found.stderr)
    assert json.loads(found.stdout)["entries"][0]["decisions"] == [DECISION], "--json decodes to the exact text"
