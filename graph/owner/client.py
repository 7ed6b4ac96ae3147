"""A front's handle on a workspace that another process owns.

Every call goes to the owner's endpoint. When the owner goes away (it exits, or is
killed), the next call makes this process the owner if it can take the lock, or
follows whichever front did, and the call is made again there: no call is lost, and
the lock still guarantees one store writer and one cognee worker. A call that was
in flight when the owner died is re-sent; a staged ingest is durable, so re-sending
at worst stages the same summary again as a newer version of its topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from graph.core.contract import ErrorCode, FlowbabyError, OperationStatus, WatchingSessions
from graph.core.environment import Environment
from graph.core.methods import OWNER_METHODS
from graph.core.service_protocol import MemoryService, OperationListener, operation_models
from graph.core.workspace import WorkspacePaths
from graph.owner.wire import MAX_REPLY_BYTES, encode, failure_from_wire, peer_uid, published_socket

log = logging.getLogger("flowbaby.owner")

Opener = Callable[[], Awaitable[Any]]
"""Opens the workspace in this process (FlowbabyService.open); raises WORKSPACE_BUSY if taken."""

CONNECT_SEC_ENV = "FLOWBABY_OWNER_CONNECT_SEC"
CONNECT_SEC = 10.0
"""How long a front tries to reach an owner whose endpoint may still be starting, before WORKSPACE_BUSY
(FLOWBABY_OWNER_CONNECT_SEC; the tests that wait it out set it small)."""
TAKEOVER_DEADLINE_SEC = 60.0
"""How long a call waits for some front to become the new owner after the old one left."""


def _connect_sec() -> float:
    """FLOWBABY_OWNER_CONNECT_SEC, or CONNECT_SEC when it is not a number of seconds (logged)."""
    try:
        return max(0.0, Environment.read().seconds(CONNECT_SEC_ENV, CONNECT_SEC))
    except ValueError:
        log.warning("%s is not a number of seconds; using %g", CONNECT_SEC_ENV, CONNECT_SEC)
        return CONNECT_SEC


class OwnerGone(ConnectionError):
    """The owner's endpoint is not there (any more)."""


class _Connection:
    """One socket to the owner: calls matched to replies by id, events to listeners."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_event: OperationListener) -> None:
        self._reader, self._writer = reader, writer
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._on_event = on_event
        self._pump = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, paths: WorkspacePaths, on_event: OperationListener) -> _Connection:
        """Connect to the socket owner.json names, only if it is this workspace's socket and
        a process of this user listens on it (graph.owner.wire.published_socket)."""
        try:
            path = published_socket(paths)
            reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_REPLY_BYTES)
        except FlowbabyError as error:
            raise OwnerGone(f"no owner endpoint: {error.message}") from None
        except (OSError, ValueError) as exc:
            raise OwnerGone(f"no owner endpoint: {exc}") from None
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid != os.getuid():
            writer.close()
            raise OwnerGone(f"no owner endpoint: {path} is served by uid {uid}, not this user")
        return cls(reader, writer, on_event)

    @property
    def alive(self) -> bool:
        return not self._pump.done()

    async def call(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if not self.alive:
            raise OwnerGone("owner connection closed")
        call_id = next(self._ids)
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = reply
        try:
            self._writer.write(encode({"id": call_id, "method": method, "args": args}))
            await self._writer.drain()
            return await reply
        except ConnectionError as exc:
            raise OwnerGone(str(exc)) from None
        finally:
            self._pending.pop(call_id, None)

    async def _read(self) -> None:
        """Replies to their calls, events to the listeners. A line that is not a JSON object
        ends the connection: the calls waiting on it fail with FLOWBABY_ERROR (the owner is
        there but speaks no protocol we know; taking over would wait on its lock)."""
        broken: FlowbabyError | None = None
        try:
            while line := await self._reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if not isinstance(message, dict):
                    broken = FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner sent {line[:80]!r}")
                    break
                if "event" in message:
                    await self._event(message)
                elif (waiting := self._pending.get(message.get("id"))) is not None and not waiting.done():  # type: ignore[arg-type]
                    waiting.set_result(message)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
            log.warning("owner connection broke: %s", exc)
        finally:
            if broken is not None:
                log.warning("owner connection dropped: %s", broken.message)
                self._writer.close()
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(broken or OwnerGone("the owner went away"))

    async def _event(self, message: dict[str, Any]) -> None:
        """An event the listeners can take, or a warning: one bad event never ends the connection."""
        try:
            status = OperationStatus.model_validate(message.get("status"))
        except ValueError as exc:
            log.warning("ignoring a malformed event from the owner: %s", str(exc)[:200])
            return
        try:
            await self._on_event(status)
        except Exception:  # a listener's failure is not the connection's
            log.exception("an operation listener failed")

    async def close(self) -> None:
        self._pump.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


def _outcome(method: str, reply: dict[str, Any]) -> Any:
    """The result of an owner's reply, or the failure it carries, raised as a contract failure:
    a fault (the owner's unexpected exception) or a reply of no known shape is FLOWBABY_ERROR."""
    if "failure" in reply:
        try:
            failure = failure_from_wire(reply["failure"])
        except (KeyError, ValueError, TypeError, AttributeError):
            failure = FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner failed {method}: {reply!r:.200}")
        raise failure
    if "fault" in reply:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner failed {method}: {reply['fault']!s:.500}")
    if "result" not in reply:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner answered {method} with {reply!r:.200}")
    return reply["result"]


def _wire(value: Any) -> Any:
    """An argument as JSON: a request model's fields as the caller set them (the owner fills the defaults again,
    so an ingest's generated topicId stays unnamed: reconciled as the caller's own front would)."""
    return value.model_dump(mode="json", exclude_unset=True) if isinstance(value, BaseModel) else value


def _typed(method: str, result: Any) -> Any:
    """A typed operation's result as its reply model; one that is not (an owner of another version, a
    broken one) is FLOWBABY_ERROR, as any reply of no known shape."""
    reply_model = operation_models(method)[1]
    if reply_model is None:
        return result
    try:
        return reply_model.validate_python(result, strict=False)
    except ValidationError as exc:
        message = f"The workspace's owner answered {method} with {result!r:.200}: {exc.errors()[0]['msg']}"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message) from None


if TYPE_CHECKING:  # the operations are made from the method table below: mypy checks them as the Protocol's
    _Operations = MemoryService
else:
    _Operations = object


class OwnerClient(_Operations):
    """The service API of a workspace owned elsewhere, until this process owns it."""

    def __init__(self, paths: WorkspacePaths, opener: Opener) -> None:
        self.paths = paths
        self._opener = opener
        self._connection: _Connection | None = None
        self._local: Any = None
        self._listeners: list[OperationListener] = []
        self._switch = asyncio.Lock()
        self._watching = False
        """This front asked for session watching: a process that takes over keeps it going."""
        self.origin: str | None = None
        """This front's own folder (a worktree of the owner's repository, say): sent with stagings and
        retrievals so the owner records and reads against this front's git checkout."""

    @classmethod
    async def connect(cls, paths: WorkspacePaths, opener: Opener, deadline_sec: float | None = None) -> OwnerClient:
        """Reach the current owner; its endpoint may still be starting (default: FLOWBABY_OWNER_CONNECT_SEC)."""
        client = cls(paths, opener)
        if deadline_sec is None:
            deadline_sec = _connect_sec()
        until = time.monotonic() + deadline_sec
        while True:
            try:
                client._connection = await _Connection.open(paths, client._dispatch)
                return client
            except OwnerGone:
                if time.monotonic() > until:
                    raise
                await asyncio.sleep(0.1)

    @property
    def owns_workspace(self) -> bool:
        return self._local is not None

    def add_operation_listener(self, listener: OperationListener) -> None:
        self._listeners.append(listener)
        if self._local is not None:
            self._local.add_operation_listener(listener)

    async def _dispatch(self, status: OperationStatus) -> None:
        for listener in self._listeners:
            await listener(status)

    async def call(self, method: str, **args: Any) -> Any:
        until = time.monotonic() + TAKEOVER_DEADLINE_SEC
        while True:
            if self._local is not None:
                outcome = getattr(self._local, method)(**args)
                return await outcome if asyncio.iscoroutine(outcome) else outcome
            connection = self._connection
            try:
                if connection is None or not connection.alive:
                    raise OwnerGone("not connected")
                wire = {key: _wire(value) for key, value in args.items()}
                reply = await connection.call(method, wire)
            except OwnerGone:
                if time.monotonic() > until:
                    raise FlowbabyError(
                        ErrorCode.WORKSPACE_BUSY, "The workspace's owner went away and no front could take over"
                    ) from None
                await self._follow_or_take_over(connection)
                continue
            return _typed(method, _outcome(method, reply))

    async def _follow_or_take_over(self, broken: _Connection | None) -> None:
        async with self._switch:
            if self._local is not None or (self._connection is not broken and self._connection is not None):
                return  # another call already switched
            if broken is not None:
                await broken.close()
            self._connection = None
            try:
                self._local = await self._opener()
            except FlowbabyError as error:
                if error.code is not ErrorCode.WORKSPACE_BUSY:
                    raise
                await asyncio.sleep(0.1)  # another front won the lock; follow it once it listens
                with contextlib.suppress(OwnerGone):
                    self._connection = await _Connection.open(self.paths, self._dispatch)
                return
            log.warning("the owner of %s went away: this process (pid %s) owns it now", self.paths.root, os.getpid())
            for listener in self._listeners:
                self._local.add_operation_listener(listener)
            if self._watching:
                await self._local.watch_sessions()

    # -- the service API: every other operation is forwarded (_forwarder, below the class) ----------
    async def watch_sessions(self) -> WatchingSessions:
        self._watching = True
        reply: WatchingSessions = await self._answer("watch_sessions")
        return reply

    async def _answer(self, method: str, **args: Any) -> Any:
        """The operation's reply: its contract model for a typed operation, else a JSON object."""
        result = await self.call(method, **args)
        if not isinstance(result, dict | BaseModel):
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The workspace's owner answered {method} without an object")
        return result

    async def close(self, grace_sec: float = 30.0, *, hand_on: bool = False) -> None:
        if self._local is not None:
            await self._local.close(grace_sec, hand_on=hand_on)
        if self._connection is not None:
            await self._connection.close()


def _forwarder(name: str) -> Callable[..., Awaitable[Any]]:
    """Operation `name` of the method table, sent to the owner with the caller's arguments by name (bound
    to the Protocol's signature, so a wrong argument fails here as it would on the service); the operations
    that record the caller's folder get this front's when the caller names none."""
    signature = inspect.signature(getattr(MemoryService, name))

    async def forward(self: OwnerClient, *args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(self, *args, **kwargs).arguments
        del arguments["self"]
        if "origin" in signature.parameters:
            arguments["origin"] = arguments.get("origin") or self.origin
        return await self._answer(name, **arguments)

    forward.__name__ = forward.__qualname__ = name
    forward.__signature__ = signature  # type: ignore[attr-defined]
    return forward


for _name in sorted(OWNER_METHODS - set(vars(OwnerClient))):
    setattr(OwnerClient, _name, _forwarder(_name))
