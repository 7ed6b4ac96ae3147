"""Honest token counts for the retrieval budget: tiktoken's cl100k_base, the encoding
most agent LLMs bill in. Its files ship inside litellm, so nothing is downloaded."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

from graph.core.environment import export


@lru_cache(maxsize=1)
def _encoding() -> Any:
    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        export(
            {"TIKTOKEN_CACHE_DIR": str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers")}, keep_set=True
        )
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of text that fits in limit tokens, marked as cut."""
    encoding = _encoding()
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    marker = " …[truncated]"
    keep = max(0, limit - len(encoding.encode(marker)))
    return encoding.decode(tokens[:keep]).rstrip() + marker if keep else ""
