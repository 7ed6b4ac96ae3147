"""`flowbaby hook <event>`: what a client hook runs (Claude Code hooks, the OpenCode plugin).

It reads the client's hook JSON on stdin and prints what the agent should see: the briefing
at SessionStart, recalled memories at UserPromptSubmit, nothing at Stop, PreCompact and
SessionEnd (which capture the session). The path is latency-critical, so this module imports
only the standard library: it talks to the workspace's running owner over its unix socket
(graph/owner/wire.py's line protocol) and never opens the workspace itself. With no owner, the
briefing and the recall start the workspace's service (`flowbaby start`'s command, detached) and
wait for its answer up to FLOWBABY_HOOK_START_SEC; a capture is handed to a detached process.
Whatever fails, the hook exits 0 with empty output and logs to .flowbaby/logs/hooks.log (and why
nothing was injected to the user's state folder, which `flowbaby status` and VS Code show):
the client's session is never blocked or broken.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, pathlib, subprocess and traceback cost start-up time: imported only when used
    from typing import Any

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
TIMEOUT_ENV = "FLOWBABY_HOOK_TIMEOUT_SEC"
DEFAULT_TIMEOUT_SEC = 1.5
"""The longest a briefing or recall waits for a warm owner; past it the hook prints nothing."""
START_ENV = "FLOWBABY_HOOK_START_SEC"
DEFAULT_START_SEC = 20.0
"""With no owner, or one started less than COLD_OWNER_SEC ago: how long a briefing or recall waits for it
(a cold owner answered a briefing 1.9-3.4 s after its start here; Claude Code's hooks get 30 s)."""
COLD_OWNER_SEC = 60.0
"""An owner whose endpoint is younger than this may still be loading its model: recall waits longer."""
IDLE_EXIT_ENV = "FLOWBABY_IDLE_EXIT_SEC"
DEFAULT_IDLE_EXIT_SEC = 1800.0
"""The idle time of a service a hook starts (graph/owner/service_record.py's default)."""
CAPTURE_WAIT_SEC = 0.3
"""A capture is the owner's work: the hook waits this long for the reply, then leaves it running."""
STOP_DEBOUNCE_ENV = "FLOWBABY_CAPTURE_DEBOUNCE_SEC"
DEFAULT_STOP_DEBOUNCE_SEC = 300.0
MAX_STDIN_BYTES = 4 * 1024 * 1024
BUDGET_ENVS = {"briefing": ("FLOWBABY_BRIEFING_TOKENS", 800), "recall": ("FLOWBABY_RECALL_TOKENS", 400)}


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _folder(data: str, parts: tuple[str, ...], create: bool) -> int:
    """A descriptor of `data`/parts (made 0700 where missing when `create`), reached without following
    a link at any step: a repository can commit `.flowbaby/logs` or `.flowbaby/hooks/...` as links
    (INGEST_CONTRACT.md 9.1). OSError (ELOOP, ENOTDIR) when one is a link or not a folder."""
    fd = os.open(data, _FOLDER_FLAGS)
    try:
        for name in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
            inner = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_file(data: str, relative: str, flags: int, create: bool = False) -> int:
    """os.open of `data`/relative, following no link (see _folder)."""
    *parts, name = relative.split("/")
    folder = _folder(data, tuple(parts), create)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    finally:
        os.close(folder)


def _append(data: str, relative: str) -> int:
    return _open_file(data, relative, os.O_WRONLY | os.O_APPEND | os.O_CREAT, create=True)


def peer_uid(conn: socket.socket) -> int | None:
    """As graph.owner.wire.peer_uid, for the command line's standard-library clients (this hook and
    flowbaby/owner_line.py): the uid at the other end, None where the platform cannot tell."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        return int.from_bytes(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8], sys.byteorder)
    if hasattr(socket, "LOCAL_PEERCRED"):  # macOS: struct xucred {version, uid, ...}
        return int.from_bytes(conn.getsockopt(0, socket.LOCAL_PEERCRED, 76)[4:8], sys.byteorder)
    return None


class OwnerUnavailable(Exception):
    """No owner answers on the workspace's socket (none running, or too slow)."""


class NoOwner(OwnerUnavailable):
    """No owner runs: no endpoint published, or nothing listens on it."""


class ServiceRefused(OwnerUnavailable):
    """The service this hook started exited with an error: `refusal` is the line it gave (the workspace
    refused, section 9.1), shown to the person rather than left in service.log."""

    def __init__(self, message: str, refusal: str) -> None:
        super().__init__(message)
        self.refusal = refusal


def call_owner(data: str, method: str, params: dict[str, Any], timeout: float, cold: float | None = None) -> Any:
    """One call on the owner's socket: {"id","method","args"} out, the line with our id back. `cold`: the
    wait allowed instead of `timeout` when the owner started less than COLD_OWNER_SEC ago."""
    address, age = _owner_endpoint(data)
    deadline = time.monotonic() + (max(timeout, cold) if cold is not None and age < COLD_OWNER_SEC else timeout)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                conn.connect(address)
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise NoOwner(f"no owner endpoint: {address}: {exc.strerror}") from None
            if peer_uid(conn) not in (None, os.getuid()):
                raise OwnerUnavailable(f"{address} is served by another user")
            conn.sendall(json.dumps({"id": 1, "method": method, "args": {"request": params}}).encode() + b"\n")
            buffer = b""
            while True:
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = conn.recv(1 << 16)
                if not chunk:
                    raise NoOwner("the owner closed the connection")  # it was leaving: start another
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    reply = json.loads(line)
                    if reply.get("id") != 1:
                        continue  # an operationEnded event pushed to every front
                    if "result" in reply:
                        _answered(data)
                        return reply["result"]
                    raise RuntimeError(f"owner: {reply.get('failure') or reply.get('fault')}")
        except (OSError, TimeoutError) as exc:
            raise OwnerUnavailable(f"owner did not answer: {exc}") from None


def _private(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid() and not info.st_mode & 0o077


def _runtime_name(root: str) -> str:
    """This workspace's socket name in the runtime folder (graph.owner.wire._runtime_name): not another
    workspace's, whose owner would answer with that workspace's memories."""
    import hashlib

    return f"{hashlib.sha256(root.encode()).hexdigest()[:16]}.sock"


def owner_socket(data: str) -> str:
    """The socket of the workspace's owner (_owner_endpoint), for flowbaby/owner_line.py."""
    return _owner_endpoint(data)[0]


def _owner_endpoint(data: str) -> tuple[str, float]:
    """The socket owner.json names, trusted as the fronts trust it (INGEST_CONTRACT.md 9.1), and the
    seconds since the owner wrote it: a repository can commit owner.json (git writes it 0644) to send
    prompts to another user's socket. owner.json is a private regular file of this user; the socket
    is `.flowbaby/owner.sock` or this workspace's name in a private `flowbaby-<uid>` folder of this user."""
    try:
        with open(_open_file(data, "owner.json", os.O_RDONLY), encoding="utf-8") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or not _private(info):
                raise NoOwner("no owner endpoint: owner.json is not a private file of this user")
            address = str(json.load(handle)["socket"])
        folder = os.path.dirname(address)
        allowed = address == os.path.join(data, "owner.sock") or (
            os.path.basename(folder) == f"flowbaby-{os.getuid()}"
            and os.path.basename(address) == _runtime_name(os.path.dirname(data))
            and stat.S_ISDIR((inside := os.lstat(folder)).st_mode)
            and _private(inside)
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NoOwner(f"no owner endpoint: {exc}") from None
    if not allowed:
        raise NoOwner(f"no owner endpoint: owner.json names {address}, not a socket of this workspace")
    return address, time.time() - info.st_mtime


class HookState:
    """The hooks' own small files under .flowbaby/hooks/: per session, the topicIds already
    injected and the last capture; per agent, when its last session started."""

    def __init__(self, data: str) -> None:
        self.data = data

    def _read(self, path: str) -> dict[str, Any]:
        try:
            with open(_open_file(self.data, path, os.O_RDONLY), encoding="utf-8") as handle:
                value = json.load(handle)
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def _write(self, path: str, value: dict[str, Any]) -> None:
        *parts, name = path.split("/")
        folder = _folder(self.data, tuple(parts), create=True)
        try:
            staging = f"{name}.{os.getpid()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with open(os.open(staging, flags, 0o600, dir_fd=folder), "w", encoding="utf-8") as handle:
                json.dump(value, handle)
            os.replace(staging, name, src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(folder)

    def _session_file(self, session_id: str) -> str:
        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:120]
        return f"hooks/sessions/{name}.json"

    def session(self, session_id: str) -> dict[str, Any]:
        return self._read(self._session_file(session_id))

    def save_session(self, session_id: str, value: dict[str, Any]) -> None:
        self._write(self._session_file(session_id), value)

    def last_start(self, agent: str) -> str | None:
        value = self._read("hooks/agents.json").get(agent)
        return value if isinstance(value, str) else None

    def mark_start(self, agent: str, stamp: str) -> None:
        agents = self._read("hooks/agents.json")
        agents[agent] = stamp
        self._write("hooks/agents.json", agents)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _budget(kind: str) -> int:
    name, default = BUDGET_ENVS[kind]
    return int(_float_env(name, default))


def capture_enabled() -> bool:
    return os.environ.get("FLOWBABY_CAPTURE", "1").strip().lower() not in ("0", "false", "off", "no")


def handle(event: str, payload: dict[str, Any], workspace: str, client: str) -> str:
    """The text to print for one hook event."""
    data = os.path.join(workspace, ".flowbaby")
    if not os.path.isdir(data) or os.path.islink(data):
        return ""  # not a flowbaby workspace (yet), or one refused (9.1): nothing to say, nothing to create
    state = HookState(data)
    session_id = str(payload.get("session_id") or payload.get("sessionID") or "")
    timeout = _float_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_SEC)
    if event == "SessionStart":
        since = state.last_start(client)
        state.mark_start(client, _now_iso())
        params: dict[str, Any] = {"agentName": client, "maxTokens": _budget("briefing")}
        if since:
            params["since"] = since
        reply = ask_owner(workspace, "briefing", params, timeout)
        _remember(state, session_id, [item["topicId"] for item in reply.get("items", [])])
        return str(reply.get("text") or "")
    if event == "UserPromptSubmit":
        prompt = _without_hook_context(str(payload.get("prompt") or "")).strip()
        if not prompt:
            return ""
        seen = state.session(session_id).get("injected", []) if session_id else []
        query = {"query": prompt[:4000], "exclude": seen, "maxTokens": _budget("recall"), "agentName": client}
        reply = ask_owner(workspace, "recall", query, timeout)
        _remember(state, session_id, list(reply.get("topicIds") or []))
        return str(reply.get("text") or "")
    if event in CAPTURE_EVENTS and session_id and capture_enabled():
        session = state.session(session_id)
        if event == "Stop":
            debounce = _float_env(STOP_DEBOUNCE_ENV, DEFAULT_STOP_DEBOUNCE_SEC)
            if time.time() - float(session.get("lastCapture", 0)) < debounce:
                return ""
        session["lastCapture"] = time.time()
        state.save_session(session_id, session)
        params = {"source": client, "sessionId": session_id, "agentName": client, "reason": event}
        if payload.get("transcript_path"):
            params["transcriptPath"] = str(payload["transcript_path"])
        try:
            call_owner(data, "capture", params, CAPTURE_WAIT_SEC)
        except NoOwner:  # no owner at all: a detached process captures
            _capture_detached(workspace, params)
        except OwnerUnavailable:
            pass  # an owner too slow to reply within CAPTURE_WAIT_SEC still captures
    return ""


def _without_hook_context(prompt: str) -> str:
    """The user's prompt without the `<hook_context>` blocks Gemini CLI prepends to it (the briefing
    it was just given): those words would be recalled for instead of the user's."""
    while (start := prompt.find("<hook_context>")) >= 0 and (end := prompt.find("</hook_context>", start)) >= 0:
        prompt = prompt[:start] + prompt[end + len("</hook_context>") :]
    return prompt


def output(text: str, client: str, payload: dict[str, Any], notice: bool = False) -> str:
    """What to print: the text itself (Claude Code and Codex CLI give plain stdout to the model), or for
    Gemini CLI, which shows plain stdout to the user only, its JSON with `additionalContext`. A `notice`
    (the service refused) is for the person too: Claude Code and Gemini CLI show a `systemMessage` to them."""
    if client != "gemini" and not (notice and client == "claude-code"):
        return text
    event = str(payload.get("hook_event_name") or "")
    reply: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps({"systemMessage": text, **reply} if notice else reply)


REFUSAL_NOTICE = (
    "Flowbaby loaded no memories for this session: the workspace's service refused to start. {refusal} "
    "(`flowbaby status` and the VS Code status bar show this too.)"
)


def _refusal_notice(workspace: str, event: str, session_id: str, refusal: str) -> str:
    """The refusal, told at SessionStart and at the first prompt of a session that was not told it yet."""
    if event not in ("SessionStart", "UserPromptSubmit"):
        return ""
    if session_id:
        state = HookState(os.path.join(workspace, ".flowbaby"))
        session = state.session(session_id)
        if event == "UserPromptSubmit" and session.get("refusalShown") == refusal:
            return ""
        session["refusalShown"] = refusal
        with contextlib.suppress(OSError):
            state.save_session(session_id, session)
    return REFUSAL_NOTICE.format(refusal=refusal)


def ask_owner(workspace: str, method: str, params: dict[str, Any], timeout: float) -> Any:
    """call_owner, starting the workspace's service when no owner runs and waiting for it (and for an
    owner that started less than COLD_OWNER_SEC ago) up to FLOWBABY_HOOK_START_SEC."""
    data = os.path.join(workspace, ".flowbaby")
    bound = _float_env(START_ENV, DEFAULT_START_SEC)
    if bound <= 0:  # FLOWBABY_HOOK_START_SEC=0: only a running owner answers, nothing is started
        return call_owner(data, method, params, timeout)
    deadline = time.monotonic() + bound
    started = False
    service: Any = None
    while True:
        try:
            return call_owner(data, method, params, timeout, cold=max(0.01, deadline - time.monotonic()))
        except NoOwner as exc:
            if not started:
                service, started = _start_service(workspace, str(exc)), True
            if service is not None and service[0].poll() not in (None, 0):  # 0: another service runs
                refusal = _service_said(data, service[1]) or f"it exited with {service[0].returncode}"
                raise ServiceRefused(f"{exc}; the workspace's service did not start: {refusal}", refusal) from None
            if time.monotonic() >= deadline:
                raise OwnerUnavailable(f"{exc}; no owner answered within {bound:g} s") from None
            time.sleep(0.05)


def _service_starting(data: str) -> bool:
    """Whether a service holds or is taking the workspace: service.lock, a private file of this user (a
    committed one is not), names a live `flowbaby serve`."""
    try:
        with open(_open_file(data, "service.lock", os.O_RDONLY), encoding="ascii") as handle:
            if not _private(os.fstat(handle.fileno())):
                return False
            pid = int(handle.read(32).strip() or 0)
        if pid <= 0:
            return False
        if os.path.isdir("/proc/self"):  # Linux; a zombie (never reaped in some containers) has no cmdline
            with open(f"/proc/{pid}/cmdline", "rb") as proc:
                return b"serve" in proc.read().split(b"\0")
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _start_service(workspace: str, why: str) -> tuple[Any, int] | None:
    """Start the workspace's service (graph/owner/service_record.py's command: `flowbaby serve --port 0
    --idle-exit SEC`), unless one is starting (None then); a second one started at the same moment
    leaves at once. The process started, to see whether it failed, and where its output begins in service.log."""
    if _service_starting(os.path.join(workspace, ".flowbaby")):
        return None
    idle = _float_env(IDLE_EXIT_ENV, DEFAULT_IDLE_EXIT_SEC)
    args = ["-m", "flowbaby", "serve", "--workspace", workspace, "--port", "0", "--idle-exit", str(idle)]
    started = _detached(workspace, args, "logs/service.log")
    _log(workspace, f"{why}: started the workspace's service")
    return started


def _service_said(data: str, offset: int) -> str:
    """The last line the service wrote to service.log after `offset` (its refusal: `flowbaby serve: CODE:
    message`), control characters dropped, at most 500 characters; "" when it wrote none."""
    try:
        with open(_open_file(data, "logs/service.log", os.O_RDONLY), "rb") as handle:
            handle.seek(max(offset, os.fstat(handle.fileno()).st_size - 8192))
            tail = handle.read(8192).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line for line in tail.splitlines() if line.strip()]
    return "".join(c for c in lines[-1] if c.isprintable())[:500] if lines else ""


def _remember(state: HookState, session_id: str, topic_ids: list[str]) -> None:
    if not session_id or not topic_ids:
        return
    session = state.session(session_id)
    session["injected"] = [*session.get("injected", []), *topic_ids][-2000:]
    state.save_session(session_id, session)


def _capture_detached(workspace: str, params: dict[str, Any]) -> None:
    """Open the workspace in a process of its own (it may take seconds to load) and capture there."""
    _detached(workspace, ["-m", "flowbaby.capture_command", workspace, json.dumps(params)], "logs/capture.log")


def _detached(workspace: str, args: list[str], log_name: str) -> tuple[Any, int]:
    """`python -P args` in a session of its own, its output appended to .flowbaby/`log_name`, nothing else
    inherited: the process, and the log's size before it. -P and flowbaby's own source root first on
    PYTHONPATH, as graph.core.child_python starts every child (this module imports nothing of flowbaby's):
    the workspace's own files are never imported."""
    import subprocess

    source_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([source_root, *inherited]))}
    with open(_append(os.path.join(workspace, ".flowbaby"), log_name), "ab") as log:
        offset = os.fstat(log.fileno()).st_size
        child = subprocess.Popen(
            [sys.executable, "-P", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=workspace,
            env=env,
        )
    return child, offset


def _log(workspace: str, text: str) -> None:
    try:
        data = os.path.join(workspace, ".flowbaby")
        if os.path.isdir(data):
            with open(_append(data, "logs/hooks.log"), "a", encoding="utf-8") as handle:
                handle.write(f"{_now_iso()} {text.rstrip()}\n")
    except OSError:
        pass


PROBLEMS_FOLDER = "flowbaby/hook-problems"
"""Why hooks injected nothing, for `flowbaby status` and VS Code (read by graph/core/hook_problems.py): in the
user's state folder, where no repository can plant a diagnosis, one file per workspace."""
MAX_PROBLEMS = 20


def _problems_at(workspace: str) -> tuple[HookState, str]:
    """The state folder's HookState and the workspace's record in it (graph.core.hook_problems.problems_path)."""
    import hashlib

    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    os.makedirs(state, 0o700, exist_ok=True)
    name = f"{hashlib.sha256(os.fsencode(workspace)).hexdigest()[:16]}.json"
    return HookState(state), f"{PROBLEMS_FOLDER}/{name}"


def _problem(workspace: str, event: str, client: str, reason: str) -> None:
    """Record a hook that injected nothing because something is wrong (not because nothing matched)."""
    data = os.path.join(workspace, ".flowbaby")
    try:
        if os.path.isdir(data) and not os.path.islink(data):
            state, record_file = _problems_at(workspace)
            record = state._read(record_file)
            problems = [row for row in record.get("problems") or [] if isinstance(row, dict)][1 - MAX_PROBLEMS :]
            problems.append({"at": _now_iso(), "event": event, "client": client, "reason": reason[:500]})
            state._write(record_file, {**record, "problems": problems})
    except OSError:
        pass


def _answered(data: str) -> None:
    """The owner answered a hook: a problem recorded before is no longer current (one failed open when none was)."""
    try:
        state, record_file = _problems_at(os.path.dirname(data))
        record = state._read(record_file)
        problems = record.get("problems") or []
        if problems and isinstance(problems[-1], dict) and str(record.get("okAt") or "") < str(problems[-1].get("at")):
            state._write(record_file, {**record, "okAt": _now_iso()})
    except OSError:
        pass


def main(argv: list[str]) -> int:
    """Always 0: a failing hook must never break the client's session."""
    event = argv[0] if argv else ""
    workspace_arg = client = None
    rest = argv[1:]
    for flag, value in zip(rest, rest[1:], strict=False):
        if flag == "--workspace":
            workspace_arg = value
        elif flag == "--client":
            client = value
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES) if not sys.stdin.isatty() else b""
        payload = json.loads(raw) if raw.strip() else {}
        payload = payload if isinstance(payload, dict) else {}
    except (ValueError, OSError):
        payload = {}
    workspace = os.path.realpath(os.path.expanduser(str(workspace_arg or payload.get("cwd") or os.getcwd())))
    if event not in EVENTS:
        _log(workspace, f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")
        return 0
    started = time.perf_counter()
    client = client or "claude-code"
    notice = False
    try:
        text = handle(event, payload, workspace, client)
    except ServiceRefused as exc:
        _log(workspace, f"{event}: nothing injected ({exc})")
        _problem(workspace, event, client, f"nothing injected: the workspace's service refused to start: {exc.refusal}")
        session_id = str(payload.get("session_id") or payload.get("sessionID") or "")
        text = _refusal_notice(workspace, event, session_id, exc.refusal)
        notice = bool(text)
    except OwnerUnavailable as exc:
        _log(workspace, f"{event}: nothing injected ({exc})")
        _problem(workspace, event, client, f"nothing injected: {exc}")
        text = ""
    except Exception as exc:  # noqa: BLE001 - the client's session comes first
        import traceback

        _log(workspace, f"{event} failed:\n{traceback.format_exc()}")
        _problem(workspace, event, client, f"failed: {type(exc).__name__}: {exc}")
        text = ""
    if text:
        sys.stdout.write(output(text, client, {"hook_event_name": event, **payload}, notice) + "\n")
        sys.stdout.flush()
    if os.environ.get("FLOWBABY_HOOK_TRACE"):
        _log(workspace, f"{event}: {len(text)} chars in {(time.perf_counter() - started) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
