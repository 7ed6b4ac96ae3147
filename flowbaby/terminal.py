"""What the command line writes for a person reaches their terminal only as text to read (issue 58 item 12).

A memory, a session, a problem or an import holds whatever an agent, a transcript or a file put in it: an
escape sequence there (ESC, CSI, OSC, DCS, in 7 or 8 bits) would erase lines, conceal text, set the title or
write the clipboard (OSC 52), and a bidi override would show text in another order than it is stored. One
sanitiser, on stdout and stderr of every command a person runs (cli.main installs it), writes each C0 and C1
control but newline and tab, DEL, and each invisible format character (Unicode Cc, Cf, Zl, Zp: bidi embeddings,
overrides and isolates, zero-width spaces and joiners, soft hyphen, BOM, tags) as its JSON escape `\\uXXXX`
(a surrogate pair beyond the BMP). A JSON answer (`--json`, an export) therefore stays exact: the escape sits
inside a JSON string, where a reader decodes it to the very character stored (json.dumps already escapes C0).
Standard library only: the command line's fast paths load it.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any, TextIO

_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")
"""Anything but printable ASCII, newline and tab: checked by its Unicode category."""
_HIDDEN = ("Cc", "Cf", "Zl", "Zp")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe(text: str) -> str:
    """`text` with every control and invisible format character but newline and tab written as `\\uXXXX`."""
    return _SUSPECT.sub(_escape, text)


class SafeStream:
    """A text stream that writes through `safe`; everything else is the wrapped stream's."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        self._raw.write(safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def guard_output() -> None:
    """Put `SafeStream` on this process's stdout and stderr (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream):
            setattr(sys, name, SafeStream(stream))
