"""Issue 45 (Hardening III), the memory browser's items, against real processes: a real `flowbaby
serve`, `flowbaby ui`, headless Debian chromium (tests/e2e/browser/attack.js) and another local
user: processes that run as `nobody` (setpriv), a listener on another loopback port and a reader of
/proc. Each test checks one item:

- 3: the browser sends its session cookie to the other user's listener (cookies ignore ports); that
  cookie, replayed to the server, must open nothing;
- 6: the other user's page frames the memory browser; the frame must not render;
- 12: `flowbaby ui` opens the browser; what the other user can read of the browser's command line
  (/proc/<pid>/cmdline) must sign nobody in, while the browser itself is signed in;
- 14: memories whose topicId holds `/`, `..` or `a/context` open and are forgotten from the page
  (and the memory `a` stays).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import PROJECT_ROOT
from tests.conftest import summary
from tests.integration.test_http_api import Server
from tests.support.browser_driver import drive, flowbaby_ui, require_driver
from tests.support.vscode_tools import chromium

SYSTEM_PYTHON = Path("/usr/bin/python3")
"""The other user runs Debian's python: this test's interpreter may live under /root."""
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(SYSTEM_PYTHON)]
ODD_TOPICS = ["a/b", "..", "a/context"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.getuid() != 0 or not SYSTEM_PYTHON.exists() or not shutil.which("setpriv"),
        reason="another local user needs root (setpriv to nobody) and /usr/bin/python3",
    ),
]

LISTENER = r"""
import http.server, json, os, sys
folder, target = sys.argv[1], sys.argv[2]
FRAME = ('<!doctype html><title>elsewhere</title><iframe src="%s/" width=600 height=400></iframe>'
         '<iframe src="%s/?embedded=1" width=600 height=400></iframe>' % (target, target))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(os.path.join(folder, "received.jsonl"), "a") as log:
            log.write(json.dumps({"path": self.path, "cookie": self.headers.get("Cookie")}) + "\n")
        body = (FRAME if self.path == "/frame" else "hello").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

READER = r"""
import json, re, sys, urllib.parse, urllib.request
pid, base = sys.argv[1], sys.argv[2]
found = {"uid": __import__("os").getuid(), "args": [], "files": {}, "redeemed": []}
args = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace").split("\0")
found["args"] = args
texts = list(args)
for arg in args:
    if arg.startswith("file://"):  # a page handed to the browser
        path = urllib.parse.unquote(arg[len("file://"):])
        try:
            texts.append(open(path, errors="replace").read())
            found["files"][path] = "read"
        except OSError as error:
            found["files"][path] = type(error).__name__
for code in set(re.findall(r"code=([A-Za-z0-9_%-]+)", "\n".join(texts))):
    request = urllib.request.Request(base + "/ui/signin", data=json.dumps({"code": code}).encode(), method="POST",
                                     headers={"X-Flowbaby-Browser": "1", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            found["redeemed"].append(reply.status)
    except urllib.error.HTTPError as error:
        found["redeemed"].append(error.code)
print(json.dumps(found))
"""

FAKE_BROWSER = r"""#!/usr/bin/python3
import os, sys, time
record = os.environ["FAKE_BROWSER_RECORD"]
if os.fork() == 0:  # the browser keeps running with its command line; its launcher returns at once
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(record + ".tmp", "w") as out:
        out.write("%d\n%s" % (os.getpid(), sys.argv[1]))
    os.rename(record + ".tmp", record)
    time.sleep(120)
"""


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Path]:
    """A folder the other user (nobody) writes in."""
    folder = Path(tempfile.mkdtemp(prefix="flowbaby-elsewhere-"))
    os.chmod(folder, 0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _bearer(root: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {(root / '.flowbaby' / 'api_token').read_text().strip()}"}


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory, elsewhere: Path) -> Iterator[dict[str, Any]]:
    """Everything the browser, the listener and the reader saw, and the server to check against."""
    require_driver()
    base = tmp_path_factory.mktemp("hardening")
    root = base / "ws"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_BUILD_GRAPH": "0", "FLOWBABY_SESSIONS_WATCH": "0"}
    server = Server(root, "--rate-limit-per-minute", "0", env=env)
    listener = subprocess.Popen(
        [*NOBODY, "-c", LISTENER, str(elsewhere), server.url], stdout=subprocess.PIPE, text=True
    )
    sleeper: int | None = None
    try:
        assert listener.stdout is not None
        listener_url = f"http://127.0.0.1:{listener.stdout.readline().strip()}"
        server.wait_ready(120)
        headers = _bearer(root)
        for topic in [*ODD_TOPICS, "a"]:
            staged = httpx.post(f"{server.url}/api/agent/ingest", json=summary(topic), headers=headers, timeout=120)
            assert staged.status_code == 202, staged.text
        listed = lambda: {m["topicId"] for m in _listed(server.url, headers)}  # noqa: E731
        for _ in range(120):
            if listed() >= {*ODD_TOPICS, "a"}:
                break
            time.sleep(0.5)

        # Item 12: `flowbaby ui` opens "the browser" (a process that keeps its command line, as a
        # browser does); the other user reads that command line and tries what it finds.
        record = base / "browser-record"
        fake = base / "fake-browser"
        fake.write_text(FAKE_BROWSER)
        fake.chmod(0o700)
        flowbaby_ui(root, {**env, "BROWSER": str(fake), "FAKE_BROWSER_RECORD": str(record)})
        for _ in range(100):
            if record.exists():
                break
            time.sleep(0.1)
        pid_text, handed = record.read_text().split("\n", 1)
        sleeper = int(pid_text)
        reader = subprocess.run(
            [*NOBODY, "-c", READER, pid_text, server.url], capture_output=True, text=True, timeout=60
        )
        assert reader.returncode == 0, reader.stderr

        link = flowbaby_ui(root, env, "--no-open").stdout.strip().splitlines()[-1]
        config = {
            "chromium": chromium(),
            "link": link,
            "base": server.url,
            "listener": listener_url,
            "topics": ODD_TOPICS,
            "handed": handed,
        }
        found = drive("attack.js", config, base)
        received = [json.loads(line) for line in (elsewhere / "received.jsonl").read_text().splitlines()]
        yield {
            "steps": found["steps"],
            "console": found["console"],
            "received": received,
            "reader": json.loads(reader.stdout),
            "server": server,
            "headers": headers,
        }
    finally:
        if sleeper is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(sleeper, signal.SIGTERM)
        listener.kill()
        listener.wait()
        server.stop()


def _listed(url: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    reply = httpx.get(f"{url}/api/agent/memories", params={"limit": 100}, headers=headers, timeout=60)
    assert reply.status_code == 200, reply.text
    return list(reply.json()["memories"])


def test_a_session_cookie_another_listener_receives_opens_nothing(seen: dict[str, Any]) -> None:
    """Item 3."""
    server: Server = seen["server"]
    assert "error" not in seen["steps"]["signin"], seen["steps"]["signin"]
    cookies = [r["cookie"] for r in seen["received"] if r["path"] == "/hello"]
    name = f"flowbaby_session_{server.port}"
    assert cookies and name in (cookies[0] or ""), seen["received"]  # cookies ignore ports: it got there
    # The other user replays it as the page would send it: the cookie and every header it can guess.
    replay = {"Cookie": cookies[0], "X-Flowbaby-Browser": "1", "Origin": server.url}
    stolen = httpx.get(f"{server.url}/api/agent/memories", headers=replay, timeout=60)
    assert stolen.status_code == 401, stolen.text[:300]
    assert httpx.get(f"{server.url}/ui/session", headers=replay).json()["signedIn"] is False


def test_another_loopback_page_cannot_frame_the_browser(seen: dict[str, Any]) -> None:
    """Item 6."""
    frames = seen["steps"]["frame"]["frames"]
    assert len(frames) == 2, seen["steps"]["frame"]
    assert [f for f in frames if f["rendered"]] == [], frames


def test_flowbaby_ui_hands_the_link_to_the_browser_out_of_reach_of_other_users(seen: dict[str, Any]) -> None:
    """Item 12."""
    reader = seen["reader"]
    assert reader["uid"] == 65534 and reader["args"], reader
    assert 200 not in reader["redeemed"], reader  # nothing on the command line (or that it names) signs in
    assert all(outcome != "read" for outcome in reader["files"].values()), reader
    handed = seen["steps"]["handed"]
    assert handed.get("signedIn") is True, handed  # while the browser itself is signed in


def test_odd_topic_ids_open_and_are_forgotten_in_the_page(seen: dict[str, Any]) -> None:
    """Item 14."""
    server: Server = seen["server"]
    for topic in ODD_TOPICS:
        shown = seen["steps"][f"open:{topic}"]
        assert shown.get("versions") == 1 and f"topic id {topic}" in shown["meta"], (topic, shown)
        assert shown.get("forgotten") and topic in shown["dialog"], (topic, shown)
    left = {m["topicId"] for m in _listed(server.url, seen["headers"])}
    assert left == {"a"}, left
