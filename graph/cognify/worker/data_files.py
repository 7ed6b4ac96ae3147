"""cognee's text files of forgotten memories, removed from this workspace's cognee data folder by name.

cognee records each stored text as an absolute URI (data.raw_data_location, `file:///<folder>/...`,
percent-encoded) and its delete removes the file only when that string holds the data folder's
path as written: in a workspace moved, copied or opened by another path (a space in it, a symlink
on the way) the forgotten text stayed on disk. Its files are content-addressed and flat, so the
file name is the key: a forgotten row's file goes from this workspace's folder once no row names it.
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


def remove_unnamed(data_folder: Path, inside: Path, forgotten: Iterable[str | None], kept: Iterable[str | None]) -> int:
    """Remove from `data_folder` the files the `forgotten` locations name and no `kept` location
    does; only while the folder really lies under `inside` (.flowbaby/, a cloned repository's
    link out is refused). Returns how many files were removed."""
    names = {n for n in map(stored_name, forgotten) if n} - {n for n in map(stored_name, kept) if n}
    folder = os.path.realpath(data_folder)
    if not names or not folder.startswith(os.path.realpath(inside) + os.sep):
        return 0
    removed = 0
    for name in sorted(names):
        path = os.path.join(folder, name)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)  # a symlink: the link itself goes, never what it points to
            removed += 1
    return removed
