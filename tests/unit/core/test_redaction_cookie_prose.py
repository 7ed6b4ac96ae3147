"""graph/core/redaction.py: a `Cookie:`/`Set-Cookie:` header quoted inside a sentence loses its name=value
pairs, and the sentence around it stays (issue 58); the line-start header keeps working as before."""

from __future__ import annotations

import pytest

from graph.core.redaction import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "the smoke test sends Cookie: sessionid=abc123def to staging",
            "the smoke test sends Cookie: [redacted] to staging",
        ),
        ("it sent Cookie: sid=a1; csrftoken=b2, then failed.", "it sent Cookie: [redacted], then failed."),
        ("the server answers Set-Cookie: token=xyz789.", "the server answers Set-Cookie: [redacted]."),
        ("(cookie: session=q1w2e3)", "(cookie: [redacted])"),
        ("Cookie: sessionid=abc; theme=dark\n", "Cookie: [redacted]\n"),
    ],
)
def test_cookie_values_go(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "the cookie: it expires after a day",
        "set the cookie banner text",
        "Cookie: see the docs",
        "fortune-cookie: a=b style notes",
    ],
)
def test_cookie_talk_stays(text: str) -> None:
    assert redact(text) == (text, 0)
