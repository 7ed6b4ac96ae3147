"""The seal of an embedded SQLite database (the memory store, the session index): flowbaby made it in
this workspace folder, so its rows are the user's (graph.core.seal, INGEST_CONTRACT.md 9.1).

The database holds a random id (table `store_identity`) and `<file>.seal` binds that id to the folder.
A repository or an archive that ships the file cannot seal it; a `git pull` that replaces it brings
another id (or none), so the replacement is refused too.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from pathlib import Path

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.memories import StoreDamaged
from graph.core.seal import is_sealed, unsealed_message, write_seal
from graph.core.workspace import create_private

_IDENTITY = "CREATE TABLE IF NOT EXISTS store_identity (id TEXT NOT NULL)"


def stored_id(path: Path) -> str | None:
    """The database's id, read without writing to it; None when it has none. StoreDamaged when SQLite
    cannot read it: the owner's message for a damaged store, and nothing of it is read either way."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        try:
            conn.execute("PRAGMA trusted_schema=OFF")
            kind = conn.execute("SELECT type FROM sqlite_master WHERE name = 'store_identity'").fetchone()
            row = conn.execute("SELECT id FROM store_identity LIMIT 1").fetchone() if kind == ("table",) else None
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreDamaged(f"{path.name} is damaged ({exc})") from exc
    return row[0] if row and isinstance(row[0], str) and row[0] else None


def check_sealed_db(path: Path, purpose: str, root: Path, what: str, unread: str) -> None:
    """INVALID_WORKSPACE_PATH unless the database at `path` carries this folder's seal for its id."""
    found = stored_id(path)
    if found is None or not is_sealed(path, purpose, root, found.encode()):
        remedy = f"{unread}; move it away (with its -wal and -shm files) to start with an empty one"
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, unsealed_message(what, path, root, remedy))


def seal_db(path: Path, purpose: str, root: Path) -> str:
    """Give the database an id if it has none and seal it for `root`; returns the id."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute(_IDENTITY)
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT id FROM store_identity LIMIT 1").fetchone()
        if row is None:
            row = (secrets.token_hex(16),)
            conn.execute("INSERT INTO store_identity (id) VALUES (?)", row)
        conn.execute("COMMIT")
    finally:
        conn.close()
    write_seal(path, purpose, root, str(row[0]).encode())
    return str(row[0])


def new_sealed_db(path: Path, purpose: str, root: Path) -> bool:
    """Make and seal an empty database at `path` when there is none (or an empty file: a first start cut
    short), after deleting SQLite files left beside it (a committed `-wal` would be replayed into it);
    False when a database is there already, which the caller then checks."""
    if os.path.lexists(path) and os.stat(path).st_size > 0:
        return False
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
    create_private(path)
    seal_db(path, purpose, root)
    return True
