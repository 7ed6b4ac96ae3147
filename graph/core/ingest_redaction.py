"""Secrets out of a memory before it is stored, embedded or sent to an LLM (INGEST_CONTRACT.md 8.1).

The session memory's patterns (graph.core.redaction: key and token shapes), credentials in URLs,
and the patterns the user adds, one regular expression per line, in the user-level file
`$XDG_CONFIG_HOME/flowbaby/redact_patterns` (`~/.config/...`; `#` starts a comment). A workspace
whose owner wants raw text sets FLOWBABY_REDACT=0.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from graph.core.contract import TEXT_LIST_FIELDS, ErrorCode, FlowbabyError, SummaryFields
from graph.core.environment import Environment
from graph.core.redaction import MARK, redact

Fields = TypeVar("Fields", bound=SummaryFields)

URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]+:)(?!" + re.escape(MARK) + r"@)[^@\s/]+(@)")
"""scheme://user:password@host: the password goes, the user and host stay."""


def user_patterns_file() -> Path:
    return Environment.read().config_home / "flowbaby" / "redact_patterns"


def load_user_patterns(path: Path | None = None) -> list[re.Pattern[str]]:
    """The user's patterns; a line that is not a regular expression is a FLOWBABY_ERROR naming it."""
    path = path or user_patterns_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Cannot read the redaction patterns {path}: {exc}") from None
    patterns = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            patterns.append(re.compile(line.strip()))
        except re.error as exc:
            raise FlowbabyError(
                ErrorCode.FLOWBABY_ERROR, f"{path} line {number} is not a regular expression: {exc}"
            ) from None
    return patterns


class Redactor:
    """Redacts a summary's text fields; `enabled` False (FLOWBABY_REDACT=0) leaves them as they are."""

    def __init__(self, enabled: bool, extra: list[re.Pattern[str]] | None = None) -> None:
        self.enabled = enabled
        self.extra = extra or []

    def text(self, value: str) -> tuple[str, int]:
        value, count = redact(value)
        value, hits = URL_CREDENTIALS.subn(r"\1" + MARK + r"\2", value)
        count += hits
        for pattern in self.extra:
            value, hits = pattern.subn(MARK, value)
            count += hits
        return value, count

    def summary(self, fields: Fields) -> tuple[Fields, int]:
        """A copy with every text field redacted, and how many secrets went."""
        if not self.enabled:
            return fields, 0
        total = 0

        def one(value: str) -> str:
            nonlocal total
            value, count = self.text(value)
            total += count
            return value

        changes: dict[str, object] = {"topic": one(fields.topic), "context": one(fields.context)}
        if fields.timeScope is not None:
            changes["timeScope"] = one(fields.timeScope)
        for name in TEXT_LIST_FIELDS:
            changes[name] = [one(item) for item in getattr(fields, name)]
        return fields.model_copy(update=changes), total
