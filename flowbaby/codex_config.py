"""Codex CLI's config.toml: the `[mcp_servers.flowbaby]` table set or taken out by editing the text,
so the user's comments, order and every other table stay as they were (Python has no TOML writer).

Both texts are parsed (tomllib) and the result checked: every other key unchanged, ours as wanted.
A `flowbaby` server written any other way (an inline table, a dotted key) is left to the user."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

OUR_TABLE = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*("flowbaby"|\'flowbaby\'|flowbaby)\s*(\.[^\]]*)?\]\s*(#.*)?$')
ANY_TABLE = re.compile(r"^\s*\[")


class TomlError(ValueError):
    """The file is not TOML, or our table cannot be changed by this edit; the message says what to do."""


def parse(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"{path} is not valid TOML ({exc}); fix it, then run the command again") from None


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def table(name: str, entry: dict[str, Any]) -> str:
    return f"[mcp_servers.{name}]\n" + "".join(f"{key} = {_value(value)}\n" for key, value in entry.items())


def merged_toml(path: Path, text: str | None, name: str, entry: dict[str, Any] | None) -> str | None:
    """config.toml's new text with `[mcp_servers.<name>]` set to `entry` (None: removed)."""
    data = parse(path, text)
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise TomlError(f'{path}: "mcp_servers" is not a table')
    if servers.get(name) == entry or (entry is None and name not in servers):
        return text
    kept: list[str] = []
    inside = False
    for line in (text or "").splitlines(keepends=True):
        if ANY_TABLE.match(line):
            inside = bool(OUR_TABLE.match(line))
        if not inside:
            kept.append(line)
    after = "".join(kept)
    if entry is not None:
        after = (after.rstrip("\n") + "\n\n" if after.strip() else "") + table(name, entry)
    try:
        result = tomllib.loads(after)
    except tomllib.TOMLDecodeError:
        result = {}  # the server was also defined another way: the check below says what to do
    others = {k: v for k, v in servers.items() if k != name}
    rest = {k: v for k, v in result.get("mcp_servers", {}).items() if k != name}
    wanted = {k: v for k, v in data.items() if k != "mcp_servers"}
    if (
        rest != others
        or {k: v for k, v in result.items() if k != "mcp_servers"} != wanted
        or result.get("mcp_servers", {}).get(name) != entry
    ):
        todo = (
            f"add or replace this by hand:\n{table(name, entry)}" if entry else f"remove [mcp_servers.{name}] by hand"
        )
        raise TomlError(f"{path} defines the {name} server in a way this command does not edit; {todo}")
    return after
