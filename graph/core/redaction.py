"""Secrets out before anything is embedded or stored: common key and token shapes become [redacted]."""

from __future__ import annotations

import re

MARK = "[redacted]"
PATTERNS = [
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n]+"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),
]


def redact(text: str) -> tuple[str, int]:
    """The text with secrets replaced, and how many were replaced."""
    count = 0
    for pattern in PATTERNS:
        text, hits = pattern.subn(r"\1" + MARK if pattern.groups else MARK, text)
        count += hits
    return text, count
