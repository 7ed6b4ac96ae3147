"""The packaged extension in a real VS Code: code-server 4.139.1 (VS Code 1.139.1) with the .vsix
installed offline, opened in headless Debian chromium through playwright-core. A small test agent
extension (extension/e2e/test-agent) calls the three commands and both tools through
vscode.lm.invokeTool and writes what it got to a file; extension/e2e/drive.js confirms the tools'
confirmation dialogs, records the toasts, reads the Output channel and the status bar, and takes
the screenshot docs/vscode-extension.md shows (docs/vscode-extension.png)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.browser_driver import stop_serve
from tests.support.vscode_tools import EXTENSION, chromium, ensure_code_server, ensure_extension_npm

pytestmark = pytest.mark.slow

ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
SCREENSHOT = PROJECT_ROOT / "docs" / "vscode-extension.png"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _vsce(folder: Path, out: Path) -> Path:
    vsce = EXTENSION / "node_modules" / ".bin" / "vsce"
    done = subprocess.run(
        [str(vsce), "package", "--no-dependencies", "--skip-license", "--allow-missing-repository", "--out", str(out)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"code-server exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"code-server did not answer {url} within {timeout}s")


def _memory_over_http(workspace: Path, topic_id: object) -> dict[str, Any]:
    """getMemory through the workspace's `flowbaby serve` (the memory browser's, started by `flowbaby ui`),
    with the workspace's API token; {} when there is no server or no topicId to ask for."""
    record = workspace / ".flowbaby" / "service.json"
    if not isinstance(topic_id, str) or not record.exists():
        return {}
    port = json.loads(record.read_text())["port"]
    token = (workspace / ".flowbaby" / "api_token").read_text().strip()
    query = urllib.parse.urlencode({"topicId": topic_id})
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/agent/memory?{query}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        shown: dict[str, Any] = json.loads(reply.read())
    return shown


def _wait_no_process(needle: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"bridge" in args and needle.encode() in args:
                alive.append(cmdline.parent.name)
        if not alive:
            return True
        time.sleep(0.5)
    return False


def test_extension_in_code_server(tmp_path: Path) -> None:
    reason = ensure_extension_npm()
    if reason:
        pytest.skip(reason)
    code_server_home, reason = ensure_code_server()
    if reason:
        pytest.skip(reason)
    assert code_server_home
    started = time.monotonic()

    # The .vsix exactly as `make vsix` builds it, and the test agent beside it.
    build = subprocess.run(["npm", "run", "build"], cwd=EXTENSION, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    with ThreadPoolExecutor(2) as pool:  # two folders, two packages: side by side
        vsix, agent_vsix = pool.map(
            _vsce,
            [EXTENSION, EXTENSION / "e2e" / "test-agent"],
            [tmp_path / "flowbaby.vsix", tmp_path / "test-agent.vsix"],
        )

    node_bin = code_server_home / "node_modules" / "node" / "bin"
    code_server = code_server_home / "node_modules" / ".bin" / "code-server"
    extensions, user_data = tmp_path / "extensions", tmp_path / "user-data"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(
        json.dumps(
            {
                "security.workspace.trust.enabled": False,
                "workbench.startupEditor": "none",
                "workbench.secondarySideBar.defaultVisibility": "hidden",
            }
        )
    )
    env = {
        **os.environ,
        "PATH": f"{node_bin}{os.pathsep}{os.environ['PATH']}",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
    }
    done = subprocess.run(  # both in one code-server start
        [str(code_server), "--extensions-dir", str(extensions), "--user-data-dir", str(user_data)]
        + ["--install-extension", str(vsix), "--install-extension", str(agent_vsix)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    # The workspace finds flowbaby through its own .venv (the second place the extension looks), once
    # the user confirms that file in a modal dialog (drive.js clicks "Run it").
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / ".venv").symlink_to(Path(sys.prefix))
    assert (workspace / ".venv" / "bin" / "flowbaby").exists()

    port = _free_port()
    log = open(tmp_path / "code-server.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [str(code_server), "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry"]
        + ["--disable-update-check", "--disable-workspace-trust"]
        + ["--extensions-dir", str(extensions), "--user-data-dir", str(user_data), str(workspace)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    results_file, seen_file = workspace / "e2e-results.json", tmp_path / "seen.json"
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", server, 60)
        SCREENSHOT.parent.mkdir(exist_ok=True)
        drive = subprocess.run(
            ["node", str(EXTENSION / "e2e" / "drive.js")],
            cwd=EXTENSION,
            capture_output=True,
            text=True,
            timeout=600,
            env={
                **os.environ,
                "URL": f"http://127.0.0.1:{port}/?folder={workspace}",
                "CHROMIUM": chromium(),
                "RESULTS": str(results_file),
                "OUT": str(seen_file),
                "SCREENSHOT": str(tmp_path / "screenshot.png"),
            },
        )
        assert drive.returncode == 0, drive.stdout + drive.stderr
        # Mark Memory Superseded's result, read over HTTP while the extension's bridge still holds the workspace.
        superseded = _memory_over_http(
            workspace, json.loads(results_file.read_text()).get("supersede", {}).get("topicId")
        )
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait()
        log.close()
        record = workspace / ".flowbaby" / "service.json"  # the port `flowbaby ui` gave the workspace's service
        browser_port = json.loads(record.read_text())["port"] if record.exists() else 0
        stop_serve(workspace)  # the memory browser's `flowbaby serve` (started by `flowbaby ui`) outlives VS Code
    # Closing VS Code stops the bridge: no flowbaby process for this workspace is left behind.
    assert _wait_no_process(str(workspace), 60), f"a flowbaby process for {workspace} outlived code-server"
    elapsed = time.monotonic() - started
    print(f"vscode e2e: {elapsed:.1f}s (code-server already built)")

    context = f"\ncode-server log tail:\n{(tmp_path / 'code-server.log').read_text()[-4000:]}"
    assert results_file.exists(), "the test agent never wrote its results" + context
    results = json.loads(results_file.read_text())
    seen = json.loads(seen_file.read_text())
    context = f"\nresults: {json.dumps(results)[:4000]}\nseen: {json.dumps(seen)[:3000]}" + context
    assert results["done"] and not results["errors"], context
    print("test agent steps (ms):", results["stepMs"])
    assert results["vscodeVersion"] == "1.139.1"

    # The exported API and validateIngestRequest.
    assert results["api"]["exports"] == [
        "backgroundStatus",
        "ingestForAgent",
        "retrieveForAgent",
        "validateIngestRequest",
    ]
    assert results["api"]["invalid"]["valid"] is False
    assert results["api"]["invalid"]["fields"] == ["context", "metadata.createdAt", "topic"]
    assert {tool["name"] for tool in results["tools"]} == {"flowbaby_storeMemory", "flowbaby_retrieveMemory"}
    assert any("Run this workspace's own flowbaby" in dialog for dialog in seen["dialogs"]), context

    # The three commands: JSON string in, JSON string out.
    ingest = results["ingest"]
    assert ingest["success"] is True and ingest["staged"] is True, context
    assert ingest["metadata"]["topic_id"] == "e2e-caching"
    invalid = results["invalidIngest"]
    assert invalid["success"] is False and invalid["errorCode"] == "INVALID_PAYLOAD"
    assert {"context", "metadata.createdAt", "metadata.updatedAt"} <= set(invalid["fields"])
    assert [detail["field"] for detail in invalid["details"]] == ["context", "metadata.createdAt", "metadata.updatedAt"]
    assert results["retrieve"]["success"] is True
    assert results["retrieve"]["entries"][0]["topicId"] == "e2e-caching"
    assert results["status"]["operationId"] == ingest["operationId"]
    assert results["final"]["status"] == "completed", context

    # Both tools through vscode.lm.invokeTool: narrative markdown plus the structured JSON block.
    assert results["storeTool"].startswith("# Memory stored"), context
    assert '"success": true' in results["storeTool"]
    assert results["retrieveTool"].startswith("# Retrieved Memories ("), context
    assert "## Structured Response (JSON)" in results["retrieveTool"]
    assert '"topicId": "e2e-caching"' in results["retrieveTool"]
    # Their confirmation messages (prepareInvocation), confirmed in the browser.
    assert any("Store memory in Flowbaby?" in dialog for dialog in seen["dialogs"]), context
    assert any("Retrieve Flowbaby memory?" in dialog for dialog in seen["dialogs"]), context

    # The Output channel, the toast and the status bar.
    activity = seen["activity"]
    assert re.search(
        rf"\[Agent Ingest\] {ISO} - Agent: E2E Test Agent - Topic: E2E caching decision - Status: success", activity
    ), context
    assert re.search(
        rf"\[Agent Ingest\] {ISO} - Agent: unknown - Topic: x - Status: error \(INVALID_PAYLOAD\)", activity
    )
    assert re.search(
        rf"\[Agent Retrieve\] {ISO} - Query: Redis session cache TTL - Results: \d+ - Status: success", activity
    )
    assert re.search(rf"\[Tool Invocation\] {ISO} - flowbaby_storeMemory called", activity), context
    assert re.search(rf"\[Tool Invocation\] {ISO} - flowbaby_retrieveMemory called", activity), context
    assert any(re.search(r"Flowbaby: memory graph built \(op_[0-9a-f]{16}\)", toast) for toast in seen["toasts"]), (
        context
    )
    assert re.search(r"Flowbaby: \d+ memories · \d+ running · \d+ queued · \w+", seen["statusBar"]), context

    # Mark Memory Superseded, picked and confirmed in the browser: the tool's note is Superseded by the caching
    # decision, with a decision by a person (decidedBy "manual") that getMemory lists.
    assert results["supersede"]["status"] == "done", context
    assert [pick.split(" -> ")[1] for pick in seen["picks"]] == ["E2E tool note", "E2E caching decision"], context
    warning = f'Mark "{results["supersede"]["topicId"]}" as superseded by "e2e-caching"?'
    assert any(warning in dialog for dialog in seen["dialogs"]), context
    assert (superseded["latest"]["topic"], superseded["latest"]["status"]) == ("E2E tool note", "Superseded"), context
    decided = [(e["decision"], e["decidedBy"], e["newer"]["topicId"]) for e in superseded["reconcile"]]
    assert decided == [("replace", "manual", "e2e-caching")], superseded
    logged = rf"\[Supersede Memory\] {ISO[:-1]}\.\d{{3}}Z - \S+ superseded by e2e-caching - Status: success"
    assert re.search(logged, activity), context

    # The commands for people and the MCP server definition provider.
    people = results["people"]
    assert people["mcpJson"]["mcpServers"]["flowbaby"]["args"][-3:] == ["mcp", "--workspace", str(workspace)], context
    assert people["opencodeJson"]["mcp"]["flowbaby"]["command"][-3:] == ["mcp", "--workspace", str(workspace)]
    assert any(toast.startswith("Flowbaby: repair queued") for toast in seen["toasts"]), context
    assert any(toast.startswith("Flowbaby: installed for Claude Code") for toast in seen["toasts"]), context
    assert any(re.match(r"Flowbaby graph: \d+ memories", toast) for toast in seen["toasts"]), context
    # The memory browser in its webview (Show Graph and Open Memory Browser): framed from the
    # loopback server, signed in by the one-time code, showing the memory list.
    assert "Flowbaby Memory Browser" in seen["tabs"], context
    browser = seen.get("browser") or {}
    # asExternalUri: VS Code frames the loopback port itself, code-server through its /proxy/<port>/.
    framed = rf"http://127\.0\.0\.1:({browser_port}/|\d+/proxy/{browser_port}/)\?embedded=1"
    assert re.match(framed, browser.get("url", "")), context
    assert "E2E caching decision" in browser["list"], context
    assert any("Flowbaby" in row for row in seen["mcpServers"]), context

    # docs/vscode-extension.md's screenshot, refreshed when FLOWBABY_UPDATE_SCREENSHOT is set.
    if os.environ.get("FLOWBABY_UPDATE_SCREENSHOT"):
        shutil.copyfile(tmp_path / "screenshot.png", SCREENSHOT)
