"""Issue 12's reliability runs against real processes: the kill loop and the fault run.

Kill loop: `kill -9` at random moments while bursts of ingests and retrievals run, against the
bridge (stdio), `flowbaby serve` (HTTP) and the cognee worker, all on one workspace. Then one
clean start checks that nothing staged was lost or duplicated, every memory is retrievable,
every graph was built or its operation failed with a code, and the lock was always taken over.

Fault run: a disk that fills mid-ingest (a small tmpfs in a private mount namespace, as root)
and is then freed; corrupted memories.sqlite, projection and LanceDB files; an unreadable .env.
Each must give its documented error or repair itself, with nothing lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bridge.client import PROJECT_ROOT, BridgeClient, BridgeClosed
from tests.support.commands import run_bridge_to_exit

TOKEN = "kill-loop-token"
ENV = {
    # Bursts must be admitted, not refused with 429 (the backlog is what is being tested),
    # and graph building runs in large batches so the final build is one cognee run.
    "FLOWBABY_MAX_QUEUED": "100000",
    "FLOWBABY_MAX_RUNNING": "200",
    "FLOWBABY_API_TOKEN": TOKEN,
    "LLM_PROVIDER": "offline",
}
OWNER_ARGS = ["--rate-limit-per-minute", "0"]
START_TIMEOUT = 90.0
FINAL_TIMEOUT = 600.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, **ENV, "PYTHONPATH": str(PROJECT_ROOT)}


def _payload(uid: str) -> dict[str, Any]:
    return {
        "topic": f"Kill loop memory {uid}",
        "context": f"Memory {uid} carries the codeword zq{uid}x so that it can be found again.",
        "decisions": [f"Keep the memory zq{uid}x safe across kill -9"],
        "agentName": "kill-loop",
        "metadata": {
            "topicId": f"kl-{uid}",
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            "status": "Active",
        },
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Owner:
    """One owning process (bridge over stdio or serve over HTTP) with ingest and retrieve."""

    def __init__(self, kind: str, workspace: Path, log: Path) -> None:
        self.kind = kind
        self._stderr = log.open("ab")
        if kind == "bridge":
            self.bridge: BridgeClient | None = BridgeClient(
                workspace, extra_args=["--shutdown-grace", "1", *OWNER_ARGS], env=_env(), stderr=self._stderr
            )
            self.proc = self.bridge.proc
        else:
            self.bridge = None
            port = _free_port()
            self.url = f"http://127.0.0.1:{port}"
            self.http = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from flowbaby.cli import main; main()", "serve"]
                + ["--workspace", str(workspace), "--port", str(port), *OWNER_ARGS],
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                env=_env(),
            )

    def health(self, timeout: float = 5.0) -> dict[str, Any]:
        if self.bridge is not None:
            return self.bridge.result("health", {}, timeout=timeout)
        reply: dict[str, Any] = self.http.get(f"{self.url}/api/health", timeout=timeout).json()
        return reply

    def wait_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(Exception):
                if self.health().get("success"):
                    return True
            time.sleep(0.1)
        return False

    def ingest(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.bridge is not None:
            return self.bridge.result("ingestForAgent", payload, timeout=30)
        reply: dict[str, Any] = self.http.post(f"{self.url}/api/agent/ingest", json=payload).json()
        return reply

    def retrieve(self, query: str, max_results: int = 3) -> dict[str, Any]:
        params = {"query": query, "maxResults": max_results}
        if self.bridge is not None:
            return self.bridge.result("retrieveForAgent", params, timeout=30)
        reply: dict[str, Any] = self.http.post(f"{self.url}/api/agent/retrieve", json=params).json()
        return reply

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._stderr.close()

    def close(self) -> int:
        if self.bridge is not None:
            code = self.bridge.close(timeout=120)
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait()
        self._stderr.close()
        return code


BURST = 3
"""Ingests per round at most: the final check builds every graph with cognee (about 2.5 s per
memory on a busy 2-core machine), so memories, not kills, set the loop's wall time."""


def _burst(owner: _Owner, acked: set[str], sent: set[str], stop: threading.Event, retrievals: list[int]) -> None:
    """Ingest up to BURST memories, a few ms apart, until stopped (or the owner dies), recording
    what was sent and what was acknowledged; a second thread retrieves meanwhile."""

    def retrieve() -> None:
        while not stop.is_set():
            retrievals[0] += 1  # sent (a retrieval waits for the warm-up, so many are cut by the kill)
            try:
                owner.retrieve(f"codeword zq{random.choice(sorted(acked) or ['none'])}x")
            except Exception:
                return
            retrievals[1] += 1  # answered

    reader = threading.Thread(target=retrieve, daemon=True)
    reader.start()
    for _ in range(BURST):
        if stop.is_set():
            break
        time.sleep(random.uniform(0, 0.1))
        uid = uuid.uuid4().hex[:12]
        sent.add(uid)
        try:
            reply = owner.ingest(_payload(uid))
        except (BridgeClosed, TimeoutError, httpx.HTTPError, RuntimeError, ValueError):
            break
        if reply.get("staged"):
            acked.add(uid)
    reader.join(timeout=5)


def _worker_pid(workspace: Path) -> int | None:
    """The cognee worker building this workspace's graphs, whoever started it: the owner just
    started, or the finisher a cleanly closed owner handed its work to (graph.owner.finisher),
    through which the new owner then works. Looking only among the new owner's children missed
    the finisher's worker, and the round waited 60 s for nothing."""
    wanted = [b"graph.cognify.worker", b"--workspace", os.fsencode(workspace.resolve())]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().split(b"\0")
            if all(part in args for part in wanted):
                return int(cmdline.parent.name)
    return None


def run_kill_loop(root: Path, kills: int = 200, seed: int = 12) -> dict[str, Any]:
    """`kills` kill -9s; about a fifth hit the cognee worker (which takes seconds to start),
    the rest the owner (bridge and serve alternately) mid-burst."""
    rng = random.Random(seed)
    random.seed(seed)
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    log = root / "owners.stderr"
    acked: set[str] = set()
    sent: set[str] = set()
    retrievals = [0, 0]
    counts = {"bridge": 0, "serve": 0, "worker": 0}
    lock_failures = 0
    started = time.perf_counter()
    done = 0
    while done < kills:
        target = "worker" if rng.random() < 0.2 else rng.choice(["bridge", "serve"])
        owner = _Owner("bridge" if target == "worker" else target, workspace, log)
        if not owner.wait_ready():
            lock_failures += 1
            owner.kill()
            continue
        stop = threading.Event()
        burst = threading.Thread(target=_burst, args=(owner, acked, sent, stop, retrievals), daemon=True)
        burst.start()
        if target == "worker":
            deadline = time.monotonic() + 60
            while (pid := _worker_pid(workspace)) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 1.5))
            if pid is not None and _worker_pid(workspace) == pid:
                os.kill(pid, signal.SIGKILL)
                counts["worker"] += 1
                done += 1
            time.sleep(rng.uniform(0, 0.3))
            stop.set()
            burst.join(timeout=30)
            owner.close()  # a clean stop: the worker crash alone is what is tested here
            continue
        time.sleep(rng.uniform(0.0, 0.35))  # mid-burst: a burst takes 0.05-0.35 s
        owner.kill()
        counts[target] += 1
        done += 1
        stop.set()
        burst.join(timeout=30)
    loop_sec = time.perf_counter() - started
    return {
        "kills": counts,
        "lockNotRecovered": lock_failures,
        "retrievalsSent": retrievals[0],
        "retrievalsAnswered": retrievals[1],
        "loopSec": round(loop_sec, 1),
        **verify_workspace(workspace, acked, sent, log),
    }


def verify_workspace(
    workspace: Path, acked: set[str], sent: set[str], log: Path, repair: bool = True
) -> dict[str, Any]:
    """One clean start: wait for graph building, then check the store, the ledger and search."""
    started = time.perf_counter()
    owner = _Owner("bridge", workspace, log)
    lock_recovered = owner.wait_ready()
    assert owner.bridge is not None
    idle = True
    try:
        owner.bridge.wait_idle(timeout=FINAL_TIMEOUT)
    except TimeoutError:
        idle = False
    deadline = time.monotonic() + FINAL_TIMEOUT
    while time.monotonic() < deadline:  # every memory embedded (the restart re-embeds what was lost)
        index = owner.bridge.result("indexStatus", {})
        if index["counts"]["vectors"] >= index["counts"]["memories"]:
            break
        time.sleep(0.5)
    db = sqlite3.connect(f"file:{workspace / '.flowbaby' / 'memories.sqlite'}?mode=ro", uri=True)
    rows = db.execute("SELECT topic_id, COUNT(*), MAX(graph_state), MAX(operation_id) FROM memories GROUP BY topic_id")
    stored = {topic.removeprefix("kl-"): (versions, state, op) for topic, versions, state, op in rows}
    ops = {
        op: (state, code)
        for op, state, code in db.execute("SELECT operation_id, state, error_code FROM operations").fetchall()
    }
    db.close()
    unreachable = 0
    for uid in stored:
        reply = owner.retrieve(f"zq{uid}x", max_results=5)
        if not any(entry["topicId"] == f"kl-{uid}" for entry in reply.get("entries", [])):
            unreachable += 1
    failed_with_code = sum(1 for _, state, op in stored.values() if state == "failed" and ops.get(op, ("", None))[1])
    built = sum(1 for _, state, _ in stored.values() if state == "indexed")
    # Then the user's remedy for graphs that failed (most because the worker was killed twice):
    # one repair, no kills, and every graph must be built.
    built_after_repair = built
    if failed_with_code and repair:
        owner.bridge.result("repair", {})
        try:
            owner.bridge.wait_idle(timeout=FINAL_TIMEOUT)
        except TimeoutError:
            idle = False
        db = sqlite3.connect(f"file:{workspace / '.flowbaby' / 'memories.sqlite'}?mode=ro", uri=True)
        built_after_repair = db.execute("SELECT COUNT(*) FROM memories WHERE graph_state = 'indexed'").fetchone()[0]
        db.close()
    owner.close()
    return {
        "sent": len(sent),
        "acknowledged": len(acked),
        "stored": len(stored),
        "lost": len(acked - stored.keys()),
        "duplicated": sum(1 for versions, _, _ in stored.values() if versions > 1),
        "storedButUnacknowledged": len(stored.keys() - acked),
        "notRetrievable": unreachable,
        "graphBuilt": built,
        "graphFailedWithCode": failed_with_code,
        "graphUnresolved": len(stored) - built - failed_with_code,
        "graphBuiltAfterRepair": built_after_repair,
        "finalIdle": idle,
        "finalLockRecovered": lock_recovered,
        "verifySec": round(time.perf_counter() - started, 1),
    }


# -- the fault run -------------------------------------------------------------------------


def _seed_workspace(workspace: Path, count: int, log: Path) -> list[str]:
    """A workspace with `count` memories, graphs built, closed cleanly."""
    workspace.mkdir(parents=True, exist_ok=True)
    owner = _Owner("bridge", workspace, log)
    assert owner.wait_ready() and owner.bridge is not None
    uids = [uuid.uuid4().hex[:12] for _ in range(count)]
    for uid in uids:
        assert owner.ingest(_payload(uid))["staged"]
    owner.bridge.wait_idle(timeout=FINAL_TIMEOUT, poll=0.5)
    owner.close()
    return uids


def _all_retrievable(owner: _Owner, uids: list[str]) -> int:
    """How many of these memories a retrieval finds, once the index caught up."""
    assert owner.bridge is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        index = owner.bridge.result("indexStatus", {})
        if index["counts"]["vectors"] >= index["counts"]["memories"]:
            break
        time.sleep(0.3)
    found = 0
    for uid in uids:
        entries = owner.retrieve(f"zq{uid}x", max_results=5).get("entries", [])
        found += any(entry["topicId"] == f"kl-{uid}" for entry in entries)
    return found


def _unavailable(workspace: Path, log: Path) -> dict[str, Any]:
    """Start a bridge that must refuse: its bridgeUnavailable line, exit code and stderr."""
    proc = run_bridge_to_exit(workspace, _env())
    with log.open("ab") as handle:
        handle.write(proc.stderr)
    first = json.loads(proc.stdout.splitlines()[0]) if proc.stdout.strip() else {}
    return {
        "exitCode": proc.returncode,
        "notification": first.get("method"),
        "errorCode": first.get("params", {}).get("errorCode"),
        "message": first.get("params", {}).get("error") or first.get("params", {}).get("message"),
        "traceback": b"Traceback" in proc.stderr,
    }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fault_corrupt_sqlite(root: Path, log: Path) -> dict[str, Any]:
    workspace = root / "corrupt-sqlite"
    _seed_workspace(workspace, 3, log)
    db = workspace / ".flowbaby" / "memories.sqlite"
    data = bytearray(db.read_bytes())
    data[0:100] = os.urandom(100)  # the header: not a database any more
    db.write_bytes(bytes(data))
    before = _digest(db)
    outcome = _unavailable(workspace, log)
    outcome["storeLeftUntouched"] = _digest(db) == before
    outcome["ok"] = (
        outcome["exitCode"] == 3
        and outcome["notification"] == "bridgeUnavailable"
        and not outcome["traceback"]
        and outcome["storeLeftUntouched"]
    )
    return outcome


def fault_unreadable_env(root: Path, log: Path) -> dict[str, Any]:
    workspace = root / "unreadable-env"
    workspace.mkdir(parents=True)
    env_file = workspace / ".env"
    env_file.write_bytes(b"LLM_PROVIDER=\xff\xfe offline\n")  # not UTF-8 (root reads a chmod 000 file)
    if os.geteuid() != 0:
        env_file.chmod(0)
    outcome = _unavailable(workspace, log)
    outcome["ok"] = (
        outcome["exitCode"] == 3
        and outcome["notification"] == "bridgeUnavailable"
        and not outcome["traceback"]
        and ".env" in (outcome["message"] or "")
    )
    return outcome


def fault_corrupt_projection(root: Path, log: Path) -> dict[str, Any]:
    workspace = root / "corrupt-projection"
    uids = _seed_workspace(workspace, 3, log)
    projection = workspace / ".flowbaby" / "graph" / "projection.json"
    projection.write_bytes(b"")
    owner = _Owner("bridge", workspace, log)
    assert owner.wait_ready() and owner.bridge is not None
    found = _all_retrievable(owner, uids)
    owner.bridge.wait_idle(timeout=FINAL_TIMEOUT, poll=0.5)
    owner.close()
    try:
        nodes = len(json.loads(projection.read_bytes())["nodes"])
    except (OSError, ValueError, KeyError):
        nodes = -1
    return {"retrievable": found, "of": len(uids), "rebuiltNodes": nodes, "ok": found == len(uids) and nodes > 0}


def fault_corrupt_lancedb(root: Path, log: Path) -> dict[str, Any]:
    workspace = root / "corrupt-lancedb"
    uids = _seed_workspace(workspace, 3, log)
    vectors = workspace / ".flowbaby" / "vectors.lance"
    broken = 0
    for data in vectors.rglob("*.lance"):
        if data.is_file():
            data.write_bytes(data.read_bytes()[:16])
            broken += 1
    owner = _Owner("bridge", workspace, log)
    assert owner.wait_ready()
    found = _all_retrievable(owner, uids)
    owner.close()
    aside = [p.name for p in (workspace / ".flowbaby").glob("vectors.lance.broken-*")]
    return {
        "truncatedFiles": broken,
        "retrievable": found,
        "of": len(uids),
        "movedAside": len(aside),
        "ok": found == len(uids) and len(aside) == 1,
    }


def fault_disk_full(root: Path, log: Path, size_mb: int = 24) -> dict[str, Any]:
    """A tmpfs of `size_mb` at the workspace's .flowbaby/, in a private mount namespace: the
    bridge starts, a filler takes the free space, ingests go on, the filler is removed, ingests
    go on again. Each ingest is acknowledged or refused with a documented code; every
    acknowledged memory is in the store exactly once."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return {"skipped": "needs root and unshare for a private tmpfs"}
    workspace = root / "disk-full"
    (workspace / ".flowbaby").mkdir(parents=True)
    mount = f'mount -t tmpfs -o size={size_mb}m,mode=0700 tmpfs "$0/.flowbaby" && exec "$@"'
    with log.open("ab") as stderr:
        client = BridgeClient(
            workspace,
            extra_args=["--shutdown-grace", "1", *OWNER_ARGS],
            env=_env(),
            stderr=stderr,
            wrapper=["unshare", "-m", "sh", "-c", mount, str(workspace)],
        )
        try:
            return _disk_full_run(client, workspace)
        finally:
            client.close(timeout=60)


def _disk_full_run(client: BridgeClient, workspace: Path) -> dict[str, Any]:
    inside = Path(f"/proc/{client.proc.pid}/root") / str(workspace).lstrip("/") / ".flowbaby"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if client.result("health", {}, timeout=5)["success"]:
                break
        time.sleep(0.2)
    client.result("indexStatus", {})
    time.sleep(1.0)  # let warm-up create the vector folder
    filler = inside / "filler"
    with filler.open("wb") as handle, contextlib.suppress(OSError):  # take every free byte
        while True:
            handle.write(b"\0" * (1 << 16))
            handle.flush()
    acked: list[str] = []
    codes: dict[str, int] = {}
    for phase in ("full", "freed"):
        if phase == "freed":
            filler.unlink()
        for _ in range(20):
            uid = uuid.uuid4().hex[:12]
            reply = client.result("ingestForAgent", _payload(uid), timeout=60)
            if reply.get("staged"):
                acked.append(uid)
                codes["staged:" + phase] = codes.get("staged:" + phase, 0) + 1
            else:
                key = f"{reply.get('errorCode')}:{phase}"
                codes[key] = codes.get(key, 0) + 1
    # The tmpfs lives only in the bridge's namespace: copy the store out (the database and its WAL,
    # with the bridge idle) and read the copy.
    copy = workspace.parent / "disk-full-copy.sqlite"
    for suffix in ("", "-wal"):
        with contextlib.suppress(FileNotFoundError):
            shutil.copyfile(inside / f"memories.sqlite{suffix}", f"{copy}{suffix}")
    target = sqlite3.connect(copy)
    rows = dict(target.execute("SELECT topic_id, COUNT(*) FROM memories GROUP BY topic_id").fetchall())
    target.close()
    lost = sum(1 for uid in acked if f"kl-{uid}" not in rows)
    duplicated = sum(1 for versions in rows.values() if versions > 1)
    health = client.result("health", {})
    documented = {"staged", "FLOWBABY_ERROR"}
    return {
        "replies": codes,
        "acknowledged": len(acked),
        "lost": lost,
        "duplicated": duplicated,
        "stagedAfterFreeing": codes.get("staged:freed", 0),
        "aliveAfter": bool(health.get("success")),
        "ok": lost == 0
        and duplicated == 0
        and codes.get("staged:freed", 0) == 20
        and all(key.split(":")[0] in documented for key in codes),
    }


def run_fault_run(root: Path) -> dict[str, Any]:
    log = root / "faults.stderr"
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for name, fault in (
        ("diskFull", fault_disk_full),
        ("corruptSqlite", fault_corrupt_sqlite),
        ("corruptProjection", fault_corrupt_projection),
        ("corruptLanceDB", fault_corrupt_lancedb),
        ("unreadableEnv", fault_unreadable_env),
    ):
        started = time.perf_counter()
        try:
            results[name] = fault(root, log)
        except Exception as exc:  # a fault run reports, it does not stop at the first surprise
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        results[name]["sec"] = round(time.perf_counter() - started, 1)
    return results


def run_reliability_faults(root: Path) -> dict[str, Any]:
    """`make bench`'s reliability part of `faults`: the full kill loop (FLOWBABY_KILL_LOOP_KILLS,
    200 by default) and the fault run."""
    kills = int(os.environ.get("FLOWBABY_KILL_LOOP_KILLS", "200"))
    return {"killLoop": run_kill_loop(root / "kill-loop", kills), "faultRun": run_fault_run(root / "fault-run")}
