"""`flowbaby adopt` never seals a planted `link.json` unseen (issue 58, item 10): the refusal of an
unsealed link names the folder it points at; `adopt` names it too and seals it only when the person
says yes on a terminal (a real pty) or passes `--yes`; with no terminal and no `--yes`, and after a
no, nothing is sealed."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

from bridge.client import PROJECT_ROOT
from tests.integration.test_cloned_data_files import clone_with
from tests.support.commands import CLI, run_bridge_to_exit, run_flowbaby


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_BUILD_GRAPH": "0"}


def _adopt_on_a_terminal(folder: Path, answer: str) -> tuple[int, str, str]:
    """`flowbaby adopt FOLDER` with stdin and stderr on a pty: answers `answer` once it asks. Its exit code,
    what the terminal showed and stdout."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [*CLI, "adopt", str(folder)], stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=_env(), text=True
    )
    os.close(slave)
    shown, deadline = b"", time.monotonic() + 120
    try:
        while b"[y/N]" not in shown and time.monotonic() < deadline and child.poll() is None:
            if select.select([master], [], [], 0.5)[0]:
                shown += os.read(master, 4096)
        assert b"[y/N]" in shown, shown.decode(errors="replace")
        os.write(master, answer.encode() + b"\n")
        out, _ = child.communicate(timeout=120)
        while select.select([master], [], [], 0.2)[0]:
            try:
                shown += os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                break
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
    return child.returncode, shown.decode(errors="replace"), out


def test_adopt_names_a_links_target_and_seals_it_only_when_asked(tmp_path: Path) -> None:
    victim = tmp_path / "the-users-other-project"
    victim.mkdir()
    planted = json.dumps({"workspace": str(victim)}).encode()
    clone = clone_with(tmp_path, {".flowbaby/link.json": planted})
    link = clone / ".flowbaby" / "link.json"
    seal = link.with_name("link.json.seal")

    refused = run_bridge_to_exit(clone, _env())
    said = refused.stderr.decode()
    assert refused.returncode == 3 and f"it would keep this folder's memory in {victim}" in said, said
    assert "flowbaby adopt" in said

    scripted = run_flowbaby("adopt", str(clone), env=_env(), stdin=subprocess.DEVNULL)
    assert scripted.returncode == 1 and not seal.exists(), scripted.stderr
    assert f"{link} keeps this folder's memory in {victim}" in scripted.stderr, scripted.stderr
    assert "no terminal to ask on" in scripted.stderr and "flowbaby adopt --yes" in scripted.stderr

    code, shown, out = _adopt_on_a_terminal(clone, "n")
    assert code == 1 and not seal.exists() and out == "", shown
    assert f"keeps this folder's memory in {victim}" in shown and "Nothing sealed" in shown, shown

    code, shown, out = _adopt_on_a_terminal(clone, "y")
    assert code == 0 and seal.exists(), shown
    reply = json.loads(out)
    assert reply["workspace"] == str(victim) and str(link) in reply["sealed"], reply

    (tmp_path / "again").mkdir()
    second = clone_with(tmp_path / "again", {".flowbaby/link.json": planted})
    scripted = run_flowbaby("adopt", "--yes", str(second), env=_env(), stdin=subprocess.DEVNULL)
    assert scripted.returncode == 0, scripted.stderr
    assert f"keeps this folder's memory in {victim}" in scripted.stderr  # named even when not asked
    assert (second / ".flowbaby" / "link.json.seal").exists()
