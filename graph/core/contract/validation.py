"""Validating a request against its model: INVALID_PAYLOAD naming the faulty field, and the text no
store can hold."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from graph.core.contract.base import MAX_PAYLOAD_CHARS, ErrorCode, FlowbabyError, _Strict
from graph.core.contract.ingest import SummaryFields


def _describe(error: ErrorDetails) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    field = ".".join(loc) if loc else "payload"
    kind = error.get("type", "")
    if kind == "missing":
        expected = "an object" if field == "metadata" else "a non-empty string"
        return f'Field "{field}" is required and must be {expected}'
    if kind in {"string_type", "string_too_short"} or (kind == "value_error" and "non-empty" in error.get("msg", "")):
        return f'Field "{field}" must be a non-empty string'
    if kind in {"int_type", "int_parsing", "float_type", "bool_type"}:
        expected = {"int": "an integer", "float": "a number", "bool": "a boolean"}[kind.split("_")[0]]
        return f'Field "{field}" must be {expected}'
    if kind in {"greater_than_equal", "less_than_equal"}:
        return f'Field "{field}" {error.get("msg", "is out of range")[0].lower()}{error.get("msg", "")[1:]}'
    if kind == "too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f'Field "{field}" has too many items' + (f" (at most {limit})" if limit else "")
    if kind == "list_type":
        return f'Field "{field}" must be an array of strings'
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        return f'Field "{field}" must be an object'
    if kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f'Field "{field}" must be at most {limit} characters'
    message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
    return f'Field "{field}" {message}'


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What no store can hold: a lone surrogate from JSON is not UTF-8, and Postgres text cannot hold U+0000
(a memory written with one on the embedded backend could never be migrated to a team namespace)."""


def storable(text: str) -> str:
    """Text from outside that flowbaby keeps anyway (a session's turns and title), with U+FFFD for
    every character no store can hold; a request holding one is refused instead (validate_request)."""
    return _UNSTORABLE.sub("\ufffd", text)


def _unstorable_field(value: Any, path: str = "") -> tuple[str, str] | None:
    """The path of the first string holding a character no store can hold, and the rule it breaks."""
    if isinstance(value, str):
        found = _UNSTORABLE.search(value)
        if found:
            if found.group() == "\x00":
                return path or "payload", "must not contain NUL (U+0000) characters"
            return path or "payload", "must be valid UTF-8 text (no lone surrogates)"
    elif isinstance(value, dict):
        for key, item in value.items():
            found_in = _unstorable_field(item, f"{path}.{key}" if path else str(key))
            if found_in:
                return found_in
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found_in = _unstorable_field(item, f"{path}.{index}")
            if found_in:
                return found_in
    return None


def validate_request(model: type[_Strict], params: Any) -> Any:
    """Validate params against a contract model or raise INVALID_PAYLOAD naming the field."""
    if not isinstance(params, dict):
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, 'Field "params" must be an object')
    try:
        request = model.model_validate(params)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            _describe(errors[0]),
            fields=sorted({".".join(str(p) for p in e.get("loc", ())) or "payload" for e in errors}),
        ) from None
    # Lone surrogates and NUL survive json.loads but cannot be stored everywhere; unknown
    # fields are already dropped here, so only fields the contract reads are checked.
    unstorable = _unstorable_field(request.model_dump(mode="python"))
    if unstorable:
        bad, rule = unstorable
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, f'Field "{bad}" {rule}', fields=[bad])
    if isinstance(request, SummaryFields) and request.char_count() > MAX_PAYLOAD_CHARS:
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            f'Field "payload" is {request.char_count()} characters; the limit is {MAX_PAYLOAD_CHARS}',
            fields=["payload"],
        )
    return request
