"""cognee's text files of forgotten memories, removed from this workspace's cognee data folder by name.

cognee records each stored text as an absolute URI (data.raw_data_location, `file:///<folder>/...`,
percent-encoded) and its delete removes the file only when that string holds the data folder's
path as written: in a workspace moved or copied, or whose path has a space (%20 in the URI), the
forgotten text stayed on disk. Its files are content-addressed and flat, so the
file name is the key: after a forget, a file of this workspace's folder that no row names goes.
Nothing outside the data folder is touched, and a symlink is unlinked, never followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

STORED_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")
"""A file name cognee gives its stored data (text_<md5>.txt): no separator, no leading dot."""


def stored_name(location: str | None) -> str | None:
    """The file name a cognee location (file:// URI or a path) ends in, if it is a plain one."""
    if not location:
        return None
    path = unquote(urlparse(location).path) if location.startswith("file://") else location
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name if STORED_NAME.fullmatch(name) else None


def remove_unnamed(data_folder: Path, inside: Path, kept: Iterable[str | None]) -> int:
    """Remove from `data_folder` each stored file that no `kept` location (every remaining row's)
    names: the forgotten rows' files, and any a killed or failed forget left (its retry sweeps
    them). Only while the folder really lies under `inside` (.flowbaby/; a cloned repository's link
    out is refused). Returns how many files were removed."""
    folder = os.path.realpath(data_folder)
    if not folder.startswith(os.path.realpath(inside) + os.sep) or not os.path.isdir(folder):
        return 0
    names = {n for n in map(stored_name, kept) if n}
    removed = 0
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if STORED_NAME.fullmatch(entry.name) and entry.name not in names and (entry.is_symlink() or entry.is_file()):
            os.unlink(entry.path)  # a symlink: the link itself goes, never what it points to
            removed += 1
    return removed
