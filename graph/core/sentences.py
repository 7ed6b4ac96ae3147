"""Sentence splitting shared by the vector chunks and the offline extractor.

A break is sentence-ending punctuation, then space, then anything but a lower-case
letter: "v1.2 ships" and "e.g. this" stay whole, while a sentence opening with a
capital, a digit, a quote, a bracket or a non-ASCII letter starts a new piece.
"""

from __future__ import annotations

import re

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[^\sa-z])")


def sentences(text: str) -> list[str]:
    """The non-empty sentences of one line or paragraph, unstripped inside."""
    return [part for part in _SENTENCE_BREAK.split(text) if part.strip()]
