"""cognee's folder (`.flowbaby/cognee/`) is used only when flowbaby made it in this workspace folder.

A repository or an archive can ship that folder. cognee trusts what it finds there: a `cognee.env`
it loads over the process environment (the LLM endpoint and key), and a relational database whose
`data` rows name the files cognify reads (`file:///proc/self/environ`, a key under ~/.ssh). So the
worker starts cognee only on a folder that carries flowbaby's seal (graph.core.seal, `state.json`);
any other is moved to `.flowbaby/set-aside/` and a new one made (INGEST_CONTRACT.md 9.1).

A folder an earlier flowbaby made has no seal, and one in a workspace moved or copied (then adopted)
has the old folder's: it is kept (and sealed again) only when every row of its database is a memory
of this workspace's own sealed store (or one forgotten whose graph step is pending). Memory ids
derive from topicId and version, so a repository could guess one: what cognee may read is
checked again before each cognify (unstaged_row), and cognee.env is made anew whatever the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

from graph.backends.backend import Backend
from graph.cognify.worker.data_files import stored_name
from graph.core.contract import FlowbabyError
from graph.core.seal import read_sealed_file, write_sealed_file
from graph.core.workspace import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, WorkspacePaths

STATE_FILE = "state.json"
STATE_PURPOSE = "cognee-state"
"""state.json's seal purpose: flowbaby made this cognee folder here."""
SET_ASIDE_DIR = "set-aside"
RELATIONAL_DB = Path("system") / "databases" / "cognee_db"
"""cognee's SQLite database under its folder on the embedded backend (its name in cognee 1.6)."""


def cognee_folder(paths: WorkspacePaths) -> Path:
    return paths.cognee_system.parent


def claim_cognee_folder(paths: WorkspacePaths, backend: Backend) -> Path | None:
    """Make `.flowbaby/cognee/` flowbaby's own before cognee is imported, and its `cognee.env` a new empty
    file. Returns where a folder flowbaby did not make was moved (None: none was)."""
    folder = cognee_folder(paths)
    moved = None
    if not _is_sealed(folder, paths) and not _empty(folder):
        reason = _legacy_refusal(folder, paths, backend)
        if reason is None:
            print(f"flowbaby: sealed {folder}, made by flowbaby for this store (earlier, or moved)", file=sys.stderr)
        else:
            moved = _set_aside(folder, paths)
            print(f"flowbaby: set aside {folder} ({reason}) to {moved}; cognee starts empty", file=sys.stderr)
    if moved is not None or not _is_sealed(folder, paths):
        folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        text = json.dumps({"id": secrets.token_hex(16)})
        write_sealed_file(folder / STATE_FILE, STATE_PURPOSE, paths.root, text)
    _new_empty_file(paths.cognee_env)
    return moved


def _is_sealed(folder: Path, paths: WorkspacePaths) -> bool:
    try:
        read_sealed_file(folder / STATE_FILE, STATE_PURPOSE, paths.root, "cognee state", "")
    except FlowbabyError:
        return False
    return True


def _empty(folder: Path) -> bool:
    """No folder, or one with nothing in it (the owner makes `.flowbaby/cognee/` at open; git ships no empty folder)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True


def _legacy_refusal(folder: Path, paths: WorkspacePaths, backend: Backend) -> str | None:
    """Why an unsealed folder is not an earlier flowbaby's for this store; None when it is: every
    row of its database is a memory of the workspace's sealed store (on the team backend cognee's
    rows live in the namespace's schema, and the folder must hold no database of its own)."""
    database = folder / RELATIONAL_DB
    if not database.is_file():
        return "it holds no cognee database of this store" if not backend.shared or _has_databases(folder) else None
    try:
        ids = _data_ids(database)
    except (sqlite3.DatabaseError, ValueError) as exc:
        return f"its database cannot be read ({exc})"
    if not ids:
        return "its database holds no memory of this store"
    store = backend.memory_store(owner=False)
    try:  # a memory forgotten since, whose graph step is still to run, counts as the store's
        known = {m.memory_id for m in store.get_memories(sorted(ids))}
        known |= {m for entry in store.forget_journal() for m in entry.memory_ids}
    finally:
        store.close()
    strangers = ids - known
    return f"{len(strangers)} of its data rows are not memories of this store" if strangers else None


def _has_databases(folder: Path) -> bool:
    databases = folder / "system" / "databases"
    return databases.is_dir() and any(databases.iterdir())


def _data_ids(database: Path) -> set[str]:
    """The ids of every `data` row, as memory ids (uuid text), read without writing."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        rows = conn.execute("SELECT id FROM data").fetchall()
    finally:
        conn.close()
    return {str(uuid.UUID(str(row[0]))) for row in rows}


def _set_aside(folder: Path, paths: WorkspacePaths) -> Path:
    """Move the folder under `.flowbaby/set-aside/` (the same file system: a rename), never read again."""
    aside = paths.data / SET_ASIDE_DIR
    aside.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    target = aside / f"cognee-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(4)}"
    os.rename(folder, target)
    return target


def _new_empty_file(path: Path) -> None:
    """cognee loads COGNEE_ENV_FILE over the environment: it is always a file flowbaby just made, empty
    (whatever was at its name, a file or a link, is removed first, never written through)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE))


def unstaged_row(location: str | None, data_folder: Path) -> str | None:
    """Why cognify must not read the file a `data` row names (None: it may): the row's file must be a
    plain file of cognee's own data folder, named as cognee names what flowbaby adds (text_<md5>.txt)."""
    name = stored_name(location)
    path = Path(unquote(urlparse(location).path)) if location and location.startswith("file://") else None
    if name is None or path is None or path.parent != data_folder:
        return f"it names {location!r}, not a file of {data_folder}"
    if os.path.islink(path) or not path.is_file():
        return f"{path} is not a regular file"
    return None
