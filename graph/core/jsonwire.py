"""Strict JSON in and out, shared by the bridge and the HTTP front; and the fast read of JSON this
program stored itself (loads_stored).

Python's json module accepts NaN and Infinity, turns 1e400 into inf, raises RecursionError on
deep nesting and ValueError on an integer of more than 4,300 digits, and writes NaN/Infinity
back out, which is not JSON. Here every such input is one `JSONInputError` (the fronts answer
parse error), and output that is not strict JSON raises ValueError instead of being written.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a message may have; no request needs more than 5."""


class JSONInputError(ValueError):
    """The text is not strict JSON, or not one this process can represent."""


def _constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONInputError(f"number {text[:40]} is out of range")
    return value


def loads(data: bytes | str) -> Any:
    """Parse strict JSON at most MAX_DEPTH deep, or raise JSONInputError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except JSONInputError:
        raise
    except RecursionError:
        raise JSONInputError(f"nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and int() past 4,300 digits
        raise JSONInputError(str(exc)[:200]) from None
    if _depth_exceeds(value, MAX_DEPTH):
        raise JSONInputError(f"nested deeper than {MAX_DEPTH} levels")
    return value


def loads_stored(data: bytes | str) -> Any:
    """JSON this program wrote itself (a store row, a file beside the graph): orjson, about 1.8x
    json's speed on the 100k rows a warm-up reads; json where orjson refuses what json.dumps may
    write (a lone surrogate escape from odd unicode). Not for input from outside: see loads."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _depth_exceeds(value: Any, limit: int) -> bool:
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def dumps(message: Any) -> str:
    """Compact UTF-8 JSON; raises ValueError rather than write NaN or Infinity."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
