"""Another local user who takes `flowbaby-<uid>` first in the shared temporary folder (and in a runtime
folder that is not ours) no longer stops the fronts of a workspace whose socket path is too long for
`.flowbaby/` (issue 58, item 13): the owner listens in a folder only this user can create, the user's
state folder, and a later front (the hook) reaches it there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary
from tests.support.commands import run_flowbaby

OTHER_UID = 65534
"""nobody: the other local user."""


def _as_other_user(*command: str) -> None:
    subprocess.run(list(command), check=True, capture_output=True, user=OTHER_UID, group=OTHER_UID)


def _short_folder(request: pytest.FixtureRequest, prefix: str, mode: int) -> Path:
    """A folder with a short path (a socket path has at most 107 bytes; pytest-xdist's tmp_path is long)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(mode)
    request.addfinalizer(lambda: shutil.rmtree(folder, ignore_errors=True))
    return folder


@pytest.mark.skipif(os.getuid() != 0, reason="acting as a second local user (nobody) needs root")
def test_a_socket_folder_another_user_took_first_does_not_stop_the_fronts(
    spawn: Callable[..., BridgeClient], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name = f"flowbaby-{os.getuid()}"
    shared_tmp = _short_folder(request, "fbtmp-", 0o1777)  # what /tmp is: anyone may create in it
    _as_other_user("mkdir", "-m", "700", str(shared_tmp / name))
    runtime = _short_folder(request, "fbrun-", 0o700)  # an XDG_RUNTIME_DIR that is the other user's
    os.chown(runtime, OTHER_UID, OTHER_UID)
    _as_other_user("mkdir", "-m", "700", str(runtime / name))
    state = _short_folder(request, "fbst-", 0o700)
    assert (shared_tmp / name).stat().st_uid == OTHER_UID and (runtime / name).stat().st_uid == OTHER_UID

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_", "XDG_"))}
    env.update(
        PYTHONPATH=str(PROJECT_ROOT),
        LLM_PROVIDER="offline",
        FLOWBABY_FINISH_SEC="0",
        FLOWBABY_BUILD_GRAPH="0",
        FLOWBABY_USER_STORE=os.environ.get("FLOWBABY_USER_STORE", str(tmp_path / "user")),
        TMPDIR=str(shared_tmp),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_STATE_HOME=str(state),
    )
    workspace = tmp_path / ("a-project-with-a-long-folder-name-" + "x" * 60)
    workspace.mkdir()
    assert len(str(workspace / ".flowbaby" / "owner.sock")) > 108

    owner = spawn(workspace, env=env)
    assert owner.result("health")["workspace"] == str(workspace.resolve())
    owner.result("ingestForAgent", summary("deep-decision", topic="Deploy", decisions=["Deploy with canary DEEP-7"]))

    endpoint = workspace / ".flowbaby" / "owner.json"
    for _ in range(600):  # the owner publishes its endpoint once its socket listens
        if endpoint.exists():
            break
        time.sleep(0.1)
    published = Path(json.loads(endpoint.read_text())["socket"])
    assert published.parent == state / name, published
    assert published.is_socket() and (state / name).stat().st_mode & 0o777 == 0o700

    payload = json.dumps({"session_id": "s1", "cwd": str(workspace)})
    # the owner above must answer (no service of the hook's own), however loaded the machine is
    hook_env = {**env, "FLOWBABY_HOOK_START_SEC": "0", "FLOWBABY_HOOK_TIMEOUT_SEC": "60"}
    done = run_flowbaby("hook", "SessionStart", "--workspace", str(workspace), input=payload, env=hook_env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "DEEP-7" in done.stdout, (done.stdout, (workspace / ".flowbaby" / "logs" / "hooks.log").read_text())
