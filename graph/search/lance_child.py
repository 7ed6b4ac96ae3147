"""The memory chunk table served from a child process, so that LanceDB stays out of the owner.

Importing LanceDB brings pyarrow and pandas with it: about 100 MB that the owning process would
keep for its whole life, to read the table once at start and append a few rows per memory. The
owner starts this child when it opens the index, and again when it appends after the child has
exited idle; the child holds no state that is not on disk.

Wire (stdin/stdout of the child): a request is one JSON line, then `payloadBytes` raw bytes; so
is a reply. Vectors travel as raw float32 rows, chunks as [memory_id, topic_id, field,
chunk_index, text] lists.

  open    -> {"ok": true} once the table is open (or {"ok": false, "error": ...}; then it exits)
  {"op": "rows"}                                  -> {"ok": true, "chunks": [...], "payloadBytes": n} + vectors
  {"op": "add", "chunks": [...], "payloadBytes": n} + vectors -> {"ok": true}
  {"op": "optimize"}                              -> {"ok": true}
  any failure                                     -> {"ok": false, "error": "Type: message"}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import numpy as np

from graph.search.chunk_table import Chunk

log = logging.getLogger("flowbaby.vectors")

START_TIMEOUT_SEC = 120.0


class LanceChildError(RuntimeError):
    """The child process itself failed (it did not start, or died mid-call): not the table's data."""


class TableUnreadable(ValueError):
    """The child started but could not open the table (a damaged folder, another model's vectors)."""


def _write(stream: IO[bytes], header: dict[str, Any], payload: bytes = b"") -> None:
    stream.write(json.dumps({**header, "payloadBytes": len(payload)}).encode() + b"\n" + payload)
    stream.flush()


def _read(stream: IO[bytes]) -> tuple[dict[str, Any], bytes] | None:
    line = stream.readline()
    if not line:
        return None
    header: dict[str, Any] = json.loads(line)
    size = int(header.get("payloadBytes", 0))
    payload = stream.read(size) if size else b""
    if len(payload) != size:
        return None
    return header, payload


class ChildChunkTable:
    """A ChunkTable whose LanceDB lives in a child process, started on demand and stopped after
    `idle_sec` without a call. Calls are serialised; every method may be called from any thread."""

    def __init__(self, path: Path, dimensions: int, idle_sec: float) -> None:
        self.dimensions = dimensions
        self._path = path
        self._idle_sec = idle_sec
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._timer: threading.Timer | None = None
        with self._lock:
            self._ensure_started()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def rows(self) -> tuple[list[Chunk], np.ndarray]:
        header, payload = self._call({"op": "rows"})
        chunks = [Chunk(*row) for row in header["chunks"]]
        vectors = np.frombuffer(payload, dtype=np.float32).reshape(len(chunks), self.dimensions)
        return chunks, vectors.copy()  # frombuffer's array is read-only

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        rows = [[c.memory_id, c.topic_id, c.field, c.chunk_index, c.text] for c in chunks]
        self._call({"op": "add", "chunks": rows}, np.ascontiguousarray(vectors, dtype=np.float32).tobytes())

    def optimize(self) -> None:
        self._call({"op": "optimize"})

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _call(self, request: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                proc = self._send(request, payload)
            except (BrokenPipeError, ConnectionResetError):
                # The child died before it had the whole request (killed between two calls), so
                # it acted on none of it: a new child gets the same request.
                self._stop()
                proc = self._send(request, payload)
            try:
                reply = _read(proc.stdout)  # type: ignore[arg-type]
            except ConnectionResetError:
                reply = None
            if reply is None:  # it may or may not have acted on the request: the caller decides
                self._stop()
                raise LanceChildError(f"the LanceDB child died during {request['op']!r}")
            self._arm_idle_timer()
        header, body = reply
        if not header.get("ok"):
            raise OSError(f"LanceDB {request['op']}: {header.get('error')}")
        return header, body

    def _send(self, request: dict[str, Any], payload: bytes) -> subprocess.Popen[bytes]:
        proc = self._ensure_started()
        _write(proc.stdin, request, payload)  # type: ignore[arg-type]
        return proc

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        project_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root, env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "graph.search.lance_child", str(self._path), str(self.dimensions)]
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        opened = _read(proc.stdout)  # type: ignore[arg-type]
        if opened is None:
            code = proc.wait(timeout=START_TIMEOUT_SEC)
            raise LanceChildError(f"the LanceDB child exited at start-up (code {code})")
        if not opened[0].get("ok"):
            proc.wait(timeout=START_TIMEOUT_SEC)
            raise TableUnreadable(str(opened[0].get("error")))
        self._proc = proc
        self._arm_idle_timer()
        return proc

    def _arm_idle_timer(self) -> None:
        if self._idle_sec <= 0:
            return
        self._timer = threading.Timer(self._idle_sec, self._stop_if_idle)
        self._timer.daemon = True
        self._timer.start()

    def _stop_if_idle(self) -> None:
        # A call that started meanwhile holds the lock and cancelled this timer; not blocking
        # here means a timer firing mid-call never waits for the call it would then cut short.
        if self._lock.acquire(blocking=False):
            try:
                if self._timer is threading.current_thread():
                    self._stop()
            finally:
                self._lock.release()

    def _stop(self) -> None:
        """Close the child's stdin: it exits when it has written what it was given."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve(path: Path, dimensions: int) -> None:
    """The child: open the table, then answer requests until stdin closes."""
    from graph.core.stdio import die_with_parent, take_stdout
    from graph.search.chunk_table import LanceChunkTable

    die_with_parent()
    out = take_stdout()
    requests = sys.stdin.buffer
    try:
        table = LanceChunkTable(path, dimensions)
    except Exception as exc:
        _write(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    _write(out, {"ok": True, "pid": os.getpid()})
    while (request := _read(requests)) is not None:
        header, payload = request
        try:
            if header["op"] == "rows":
                chunks, vectors = table.rows()
                rows = [[c.memory_id, c.topic_id, c.field, c.chunk_index, c.text] for c in chunks]
                _write(out, {"ok": True, "chunks": rows}, np.ascontiguousarray(vectors).tobytes())
            elif header["op"] == "add":
                chunks = [Chunk(*row) for row in header["chunks"]]
                table.add(chunks, np.frombuffer(payload, dtype=np.float32).reshape(len(chunks), dimensions))
                _write(out, {"ok": True})
            elif header["op"] == "optimize":
                table.optimize()
                _write(out, {"ok": True})
            else:
                _write(out, {"ok": False, "error": f"unknown op {header['op']!r}"})
        except Exception as exc:
            log.exception("LanceDB %s failed", header.get("op"))
            _write(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.search.lance_child")
    parser.add_argument("path", type=Path)
    parser.add_argument("dimensions", type=int)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    serve(args.path, args.dimensions)


if __name__ == "__main__":
    main()
