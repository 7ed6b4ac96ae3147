"""flowbaby/terminal.py: every control and invisible format character but newline and tab is written as its
JSON escape, so a terminal shows it and a JSON reader decodes it to the very character stored."""

from __future__ import annotations

import io
import json

from flowbaby.terminal import SafeStream, safe

HOSTILE = "a\x1b]52;c;eA==\x07b\x9b2Jc\u202ed\u2066e\u200bf\ufeffg\U000e0041h\r\x7f\u2028"


def test_controls_and_invisible_formatting_are_escaped() -> None:
    shown = safe(HOSTILE)
    assert all(c == "\n" or c == "\t" or 0x20 <= ord(c) < 0x7F for c in shown), repr(shown)
    assert shown.startswith("a\\u001b]52;c;eA==\\u0007b\\u009b2Jc\\u202ed")
    assert "\\udb40\\udc41h" in shown  # a tag beyond the BMP, as a surrogate pair


def test_layout_and_visible_text_are_kept() -> None:
    text = "Café ✓ 日本語 😀\n\tindented"
    assert safe(text) == text


def test_json_through_the_stream_decodes_to_the_exact_text() -> None:
    out = io.StringIO()
    SafeStream(out).write(json.dumps({"topic": HOSTILE}, ensure_ascii=False))  # type: ignore[arg-type]
    assert json.loads(out.getvalue())["topic"] == HOSTILE
