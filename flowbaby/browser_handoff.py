"""Hand the memory browser's one-time sign-in link to the browser without a command line.

A browser started on a URL keeps it in its command line, which every local user can read
(/proc/<pid>/cmdline). Instead the link goes into a page in a fresh private folder (mkdtemp:
0700, this user's) as a 0600 file, and the browser is opened on that file: its path is public,
the code is not. The page sends the browser on to the link at once (as Jupyter's redirect file
does). The code in it is spent on first use and void after 120 s anyway; each run removes the
folders earlier runs left.
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import stat
import tempfile
import time
import webbrowser
from pathlib import Path

PREFIX = "flowbaby-ui-"
STALE_SEC = 300.0
"""A folder older than this holds a void code (120 s): the next run removes it."""


def open_link(link: str) -> bool:
    """Open the browser on a private page that leads to `link`; whether a browser was found."""
    _sweep()
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    page = folder / "signin.html"
    target = html.escape(link, quote=True)
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={target}"><title>Flowbaby sign-in</title></head>'
        f'<body><p><a href="{target}">Open the Flowbaby memory browser</a></p></body></html>\n'
    )
    descriptor = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    return webbrowser.open(page.as_uri())


def _sweep() -> None:
    """Remove this user's folders of earlier runs (never another user's, never a symlink)."""
    now = time.time()
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):
            found = folder.lstat()
            mine = stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid()
            if mine and now - found.st_mtime > STALE_SEC:
                shutil.rmtree(folder)
