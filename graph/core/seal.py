"""Seals: which files under a workspace's `.flowbaby/` flowbaby itself wrote, for this user, in that folder.

A cloned repository or an unpacked archive can supply any file there, and under `umask 077` git
writes it 0600 and owned by the user, so mode and owner prove nothing about who chose the content.
Flowbaby keeps one secret key per user outside every repository (`~/.local/share/flowbaby/seal.key`
under the home the password database gives the real uid, or FLOWBABY_SEAL_KEY; 0600 in a 0700 folder,
made on first need: graph.core.environment.Environment.seal_key says why not $XDG_DATA_HOME) and writes
beside each file it must trust (`server.json`, `api_token`, `link.json`, the memory store) a
`<name>.seal`: HMAC-SHA256 of the purpose, the folder's real path and the content (for the store,
its random id). Whoever wrote a repository does not know the key, so cannot make a seal; a folder
moved or copied elsewhere, or made before seals, is sealed again by `flowbaby adopt` (INGEST_CONTRACT.md 9.1).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.environment import Environment
from graph.core.files import write_atomic

SEAL_SUFFIX = ".seal"
ADOPT_HINT = (
    "if you made it yourself (before this version of flowbaby, or in a folder since moved), "
    "run `flowbaby adopt {folder}`"
)
"""The one command that seals what a user made; printed by every refusal, never run for them."""
_VERSION = b"flowbaby-seal-1"


def read_private_file(path: Path, what: str, remedy: str = "chmod 600 it") -> str:
    """The text of `path`, which must be a regular file of this user's, mode 0600, not a symlink:
    one that anyone else could read or have written is refused (FlowbabyError)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        reason = "is a symlink" if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror}"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Refusing the {what} {path}: it {reason}") from None
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        problem = (
            "is not a regular file"
            if not stat.S_ISREG(info.st_mode)
            else "is not owned by this user"
            if info.st_uid != os.getuid()
            else f"has mode {stat.S_IMODE(info.st_mode):04o}, not 0600"
            if stat.S_IMODE(info.st_mode) != 0o600
            else None
        )
        if problem:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Refusing the {what} {path}: it {problem}; {remedy}")
        return handle.read()


def _key() -> bytes:
    """This user's seal key, made on first need; a key kept where it was before (`$XDG_DATA_HOME/flowbaby`)
    becomes it, so what was sealed with that one keeps verifying."""
    environment = Environment.read()
    path = environment.seal_key
    if not os.path.lexists(path):
        _create_key(path, _key_at(environment.legacy_seal_key, path) or secrets.token_hex(32))
    remedy = "delete it to make a new one, then seal each workspace again with `flowbaby adopt`"
    text = read_private_file(path, "seal key", remedy).strip()
    if len(text) < 32:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Refusing the seal key {path}: it is too short")
    return text.encode()


def _key_at(legacy: Path, path: Path) -> str | None:
    """The key kept at `legacy`, when that is another file than `path` and a usable private key of this user."""
    if legacy == path or not os.path.lexists(legacy):
        return None
    try:
        text = read_private_file(legacy, "seal key").strip()
    except FlowbabyError:
        return None
    return text if len(text) >= 32 else None


def _create_key(path: Path, text: str) -> None:
    """Write the key `text` at `path` exclusively (a second process that races reads the winner's: the
    key appears whole, by link(2), or not at all)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        message = f"Refusing {path.parent}: it must be a folder of this user's that no one else can write"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message)
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        staging.unlink()
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(staging, path)
    except FileExistsError:
        pass
    finally:
        staging.unlink()


def _other_key() -> bytes | None:
    """The key this environment kept at the old place when it is not the user's key: what a client with
    folders of its own sealed before keeps verifying there (it is sealed again with the user's key when rewritten)."""
    environment = Environment.read()
    text = _key_at(environment.legacy_seal_key, environment.seal_key)
    return text.encode() if text and text.encode() != _key() else None


def seal_of(purpose: str, folder: Path, content: bytes, key: bytes | None = None) -> str:
    """The seal of `content` for `purpose` in `folder` (its real path: a link to it seals the same)."""
    message = b"\0".join([_VERSION, purpose.encode(), os.fsencode(folder.resolve()), content])
    return hmac.new(key or _key(), message, hashlib.sha256).hexdigest()


def sealer(purpose: str, folder: Path, *, resolve: bool = True) -> Callable[[bytes], str]:
    """seal_of for many contents (each line of a log), the key and folder read once. `resolve=False`:
    `folder` is a real path as it was when sealed (a folder since moved: it may be gone now)."""
    where = folder.resolve() if resolve else folder
    key, prefix = _key(), b"\0".join([_VERSION, purpose.encode(), os.fsencode(where), b""])
    return lambda content: hmac.new(key, prefix + content, hashlib.sha256).hexdigest()


def seal_path(path: Path) -> Path:
    return path.with_name(path.name + SEAL_SUFFIX)


def write_seal(path: Path, purpose: str, folder: Path, content: bytes) -> None:
    """Seal `content` as what flowbaby wrote (or the user adopted) at `path`, in `folder`."""
    write_atomic(seal_path(path), seal_of(purpose, folder, content) + "\n")


def is_sealed(path: Path, purpose: str, folder: Path, content: bytes) -> bool:
    """Whether `path`'s seal matches `content` for `purpose` in `folder`."""
    try:
        fd = os.open(seal_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            found = handle.read(200).strip()
    except OSError:
        return False
    if hmac.compare_digest(found, seal_of(purpose, folder, content).encode()):
        return True
    other = _other_key()
    return other is not None and hmac.compare_digest(found, seal_of(purpose, folder, content, other).encode())


def unsealed_message(what: str, path: Path, folder: Path, remedy: str) -> str:
    """The one refusal wording (INGEST_CONTRACT.md 9.1)."""
    return (
        f"Refusing the {what} {path}: flowbaby did not write it in this folder (it has no valid seal, as a file "
        f"that came with a repository or an archive has none); {remedy}, or, {ADOPT_HINT.format(folder=folder)}"
    )


def read_sealed_file(path: Path, purpose: str, folder: Path, what: str, remedy: str) -> str:
    """read_private_file, then the seal: the text of a file flowbaby itself wrote at `path` for `folder`."""
    text = read_private_file(path, what, remedy)
    if not is_sealed(path, purpose, folder, text.encode()):
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, unsealed_message(what, path, folder, remedy))
    return text


def write_sealed_file(path: Path, purpose: str, folder: Path, text: str) -> None:
    """Write `text` to `path` (0600, atomically, never through a link) and seal it."""
    write_atomic(path, text)
    write_seal(path, purpose, folder, text.encode())


def adopt_file(path: Path, purpose: str, folder: Path, what: str, expected: str | None = None) -> None:
    """Seal the file at `path` as it is now (`flowbaby adopt`: the user says they made it). It must
    still be this user's private file: adopting does not lift the mode and owner checks. `expected`:
    the content the user was shown and confirmed; a file changed since is refused."""
    text = read_private_file(path, what, "chmod 600 it, or remove it")
    if expected is not None and text != expected:
        message = f"Not sealing the {what} {path}: it changed after you confirmed it; run `flowbaby adopt` again"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message)
    write_seal(path, purpose, folder, text.encode())
