"""LanceDB tables served from a child process, so that LanceDB stays out of the owner: the memory
chunk table here, session chunk vectors in graph.backends.embedded.session_table (each its own child).

Importing LanceDB brings pyarrow and pandas with it: about 100 MB that the owning process would
keep for its whole life, to read the table once at start and append a few rows per memory. The
owner starts this child when it opens the index, and again when it appends after the child has
exited idle; the child holds no state that is not on disk.

Wire (stdin/stdout of the child): a message is one JSON line whose `parts` lists the sizes of the
raw byte strings that follow it. Vectors travel as raw float32 rows. An append's chunks travel as
[memory_id, topic_id, field, chunk_index, text] lists; the whole table's (read at every start: 150k
chunks at 20k memories) as columns, each string column as Arrow's int32 offsets and UTF-8 bytes (JSON
took 2.7-4 s there, against 0.8 s for LanceDB's own read).

  start   -> {"ok": true} once the table is open (or {"ok": false, "error": ...}; then it exits)
  {"op": "rows"}                    -> {"ok": true, "rows": n, "columns": [...]} + per string column its
                                       offsets and bytes, then the chunk indexes (int32), then the vectors
  {"op": "add", "chunks": [...]} + vectors -> {"ok": true}
  {"op": "optimize"}                -> {"ok": true}
  {"op": "state"}                   -> {"ok": true, "version": v, "rows": n}
  {"op": "delete", "memoryIds": [...]} -> {"ok": true} (rows gone, files rewritten, old versions removed)
  any failure                       -> {"ok": false, "error": "Type: message"}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from graph.backends.embedded.chunk_table import FIELDS, LanceChunkTable
from graph.core.child_python import child_env, module_command
from graph.core.memory_chunks import Chunk
from graph.core.stdio import die_with_parent, take_stdout

log = logging.getLogger("flowbaby.vectors")

T = TypeVar("T")

STOP_TIMEOUT_SEC = 30.0
"""How long a stopping child may take to finish the append it was given before it is killed."""


class LanceChildError(RuntimeError):
    """The child process itself failed (it did not start, or died mid-call): not the table's data."""


class TableUnreadable(ValueError):
    """The child started but could not open the table (a damaged folder, another model's vectors)."""


def _write(stream: IO[bytes], header: dict[str, Any], *parts: bytes) -> None:
    """One message: the header line, then its parts (never joined: the whole table is hundreds
    of MB at 100k memories)."""
    stream.write(json.dumps({**header, "parts": [len(part) for part in parts]}).encode() + b"\n")
    for part in parts:
        stream.write(part)
    stream.flush()


def _read(stream: IO[bytes]) -> tuple[dict[str, Any], list[bytearray]] | None:
    """One message, or None at the end of the stream (also one cut short). Each part is its own
    writable buffer, so an array over one needs no copy and keeps nothing else alive."""
    line = stream.readline()
    if not line:
        return None
    header: dict[str, Any] = json.loads(line)
    parts = []
    for size in header.get("parts", []):
        part = bytearray(int(size))
        view, filled = memoryview(part), 0
        while filled < len(part):
            got = stream.readinto(view[filled:])  # type: ignore[attr-defined]
            if not got:
                return None
            filled += got
        parts.append(part)
    return header, parts


STRING_FIELDS = tuple(name for name in FIELDS if name != "chunk_index")


def encode_strings(stored: Any, names: tuple[str, ...]) -> list[bytes]:
    """The child's side of reading string columns: each one's offsets and bytes as Arrow holds them
    (no per-row Python objects), two parts per column."""
    import pyarrow as pa

    parts: list[bytes] = []
    for name in names:
        column = stored.column(name).combine_chunks().cast(pa.string())
        offsets, text = np.zeros(1, dtype=np.int32), b""
        if len(column):
            _, offset_buffer, data = column.buffers()
            bounds = np.frombuffer(offset_buffer, dtype=np.int32)[column.offset : column.offset + len(column) + 1]
            offsets, text = bounds - bounds[0], data.to_pybytes()[bounds[0] : bounds[-1]]
        parts += [offsets.astype(np.int32).tobytes(), text]
    return parts


def encode_vectors(stored: Any) -> bytes:
    flat = stored.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(flat, dtype=np.float32).tobytes()


def decode_strings(parts: list[bytearray], count: int) -> list[list[str]]:
    """The owner's side: `count` string columns from their offsets and bytes."""
    columns = []
    for position in range(count):
        bounds = np.frombuffer(parts[2 * position], dtype=np.int32).tolist()
        text = parts[2 * position + 1]
        if text.isascii():  # byte offsets are then character offsets: one decode, then slices
            whole = text.decode("ascii")
            columns.append([whole[a:b] for a, b in zip(bounds, bounds[1:], strict=False)])
        else:
            columns.append([text[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:], strict=False)])
    return columns


def _encode_rows(stored: Any) -> tuple[dict[str, Any], list[bytes]]:
    """The child's side of `rows`: the string columns, the chunk indexes as int32, then the
    vectors as float32."""
    indexes = stored.column("chunk_index").to_numpy().astype(np.int32).tobytes()
    parts = [*encode_strings(stored, STRING_FIELDS), indexes, encode_vectors(stored)]
    return {"ok": True, "rows": stored.num_rows, "columns": list(STRING_FIELDS)}, parts


def _decode_rows(header: dict[str, Any], parts: list[bytearray], dimensions: int) -> tuple[list[Chunk], np.ndarray]:
    values = dict(zip(header["columns"], decode_strings(parts, len(header["columns"])), strict=True))
    indexes = np.frombuffer(parts[-2], dtype=np.int32).tolist()
    vectors = np.frombuffer(parts[-1], dtype=np.float32).reshape(int(header["rows"]), dimensions)
    chunks = [
        Chunk(*row)
        for row in zip(values["memory_id"], values["topic_id"], values["field"], indexes, values["text"], strict=True)
    ]
    return chunks, vectors


class LanceChild:
    """One table's child process (`python -m MODULE PATH DIMENSIONS`), started on demand and
    stopped after `idle_sec` without a call. Calls are serialised; any thread may call."""

    def __init__(self, module: str, path: Path, dimensions: int, idle_sec: float, start: bool = True) -> None:
        """`start`: start the child now, so that an unreadable table fails here (TableUnreadable);
        False: at the first call."""
        self._command = module_command(module, str(path), str(dimensions))
        self._idle_sec = idle_sec
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._timer: threading.Timer | None = None
        if start:
            with self._lock:
                self._ensure_started()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def call(self, request: dict[str, Any], *payload: bytes) -> tuple[dict[str, Any], list[bytearray]]:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                proc = self._send(request, *payload)
            except (BrokenPipeError, ConnectionResetError):
                # The child died before it had the whole request (killed between two calls), so
                # it acted on none of it: a new child gets the same request.
                self._stop()
                try:
                    proc = self._send(request, *payload)
                except (BrokenPipeError, ConnectionResetError):
                    self._stop()
                    raise LanceChildError(f"the LanceDB child died before {request['op']!r}") from None
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

    def _send(self, request: dict[str, Any], *payload: bytes) -> subprocess.Popen[bytes]:
        proc = self._ensure_started()
        _write(proc.stdin, request, *payload)  # type: ignore[arg-type]
        return proc

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        proc = subprocess.Popen(  # its own session: graph.core.stdio.die_with_parent
            self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), start_new_session=True
        )
        opened = _read(proc.stdout)  # type: ignore[arg-type]
        if opened is None or not opened[0].get("ok"):
            self._proc = proc
            self._stop()  # its pipes closed, and it waited for
            if opened is None:
                raise LanceChildError(f"the LanceDB child exited at start-up (code {proc.returncode})")
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
            proc.wait(timeout=STOP_TIMEOUT_SEC)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ChildTable:
    """What a table served by a LanceChild shares: the child (running `module`), optimize, close."""

    module = __name__

    def __init__(self, path: Path, dimensions: int, idle_sec: float, start: bool = True) -> None:
        self.dimensions = dimensions
        self._child = LanceChild(self.module, path, dimensions, idle_sec, start)

    @property
    def pid(self) -> int | None:
        return self._child.pid

    def optimize(self) -> None:
        self._child.call({"op": "optimize"})

    def close(self) -> None:
        self._child.close()


class ChildChunkTable(ChildTable):
    """A ChunkTable (graph.backends.embedded.chunk_table) whose LanceDB lives in a LanceChild."""

    def rows(self) -> tuple[list[Chunk], np.ndarray]:
        header, parts = self._child.call({"op": "rows"})
        return _decode_rows(header, parts, self.dimensions)

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        rows = [[c.memory_id, c.topic_id, c.field, c.chunk_index, c.text] for c in chunks]
        self._child.call({"op": "add", "chunks": rows}, np.ascontiguousarray(vectors, dtype=np.float32).tobytes())

    def delete(self, memory_ids: list[str]) -> None:
        self._child.call({"op": "delete", "memoryIds": memory_ids})

    def state(self) -> tuple[int, int]:
        header, _ = self._child.call({"op": "state"})
        return int(header["version"]), int(header["rows"])


Handler = Callable[[T, dict[str, Any], list[bytearray]], tuple[dict[str, Any], list[bytes]]]


def serve(open_table: Callable[[], T], handle: Handler[T]) -> None:
    """A child's loop: open the table, then answer requests until stdin closes. `handle` gives a
    request's reply header and parts; an exception becomes an error reply."""
    die_with_parent()
    out = take_stdout()
    requests = sys.stdin.buffer
    try:
        table = open_table()
    except Exception as exc:
        _write(out, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    _write(out, {"ok": True, "pid": os.getpid()})
    while (request := _read(requests)) is not None:
        header, parts = request
        try:
            reply, body = handle(table, header, parts)
        except Exception as exc:
            log.exception("LanceDB %s failed", header.get("op"))
            reply, body = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, []
        _write(out, reply, *body)


def _handle_chunks(
    table: LanceChunkTable, header: dict[str, Any], parts: list[bytearray]
) -> tuple[dict[str, Any], list[bytes]]:
    if header["op"] == "rows":
        return _encode_rows(table.arrow())
    if header["op"] == "add":
        chunks = [Chunk(*row) for row in header["chunks"]]
        table.add(chunks, np.frombuffer(parts[0], dtype=np.float32).reshape(len(chunks), table.dimensions))
    elif header["op"] == "optimize":
        table.optimize()
    elif header["op"] == "delete":
        table.delete(header["memoryIds"])
    elif header["op"] == "state":
        version, rows = table.state()
        return {"ok": True, "version": version, "rows": rows}, []
    else:
        raise ValueError(f"unknown op {header['op']!r}")
    return {"ok": True}, []


def child_arguments(prog: str) -> argparse.Namespace:
    """A child's command line: the table's folder and its vector size."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}")
    parser.add_argument("path", type=Path)
    parser.add_argument("dimensions", type=int)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return args


def main() -> None:
    args = child_arguments("graph.backends.embedded.lance_child")
    serve(lambda: LanceChunkTable(args.path, args.dimensions), _handle_chunks)


if __name__ == "__main__":
    main()
