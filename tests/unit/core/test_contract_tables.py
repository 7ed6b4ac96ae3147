"""The contract's tables (INGEST_CONTRACT.md and docs/contract/) against the code, both ways:
every error code, bridge method, notification, HTTP route and HTTP status the code has is
documented, and nothing documented is missing from the code. Fast: the doc is parsed, the bridge
and the app are built on a stub."""

from __future__ import annotations

import io
import re
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from starlette.routing import Route

import bridge.server
from api.app import STATUS, create_app
from bridge.server import Bridge, ProtocolWriter
from graph.core.contract import BackgroundErrorCode, ErrorCode, RetrievalErrorCode
from tests.support.contract_doc import contract_lines


def _sections() -> dict[str, list[str]]:
    """Heading line -> the lines under it, up to the next heading of any level."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    fenced = False
    for line in contract_lines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            current = sections.setdefault(line, [])
        else:
            current.append(line)
    return sections


def _table(heading: str, first_column: str) -> list[list[str]]:
    """The rows (cells stripped) of the table whose first header cell is `first_column`,
    in the one section whose heading starts with `heading`."""
    found = [lines for title, lines in _sections().items() if title.startswith(heading)]
    assert len(found) == 1, f"expected one section {heading!r}, found {len(found)}"
    rows: list[list[str]] = []
    in_table = False
    for line in found[0]:
        if not line.startswith("|"):
            if rows:
                break
            in_table = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == first_column:
            in_table = True
        elif in_table and not set(cells[0]) <= {"-", ":"}:
            rows.append(cells)
    assert rows, f"no table headed {first_column!r} under {heading!r}"
    return rows


def _codes(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


def _first_column(heading: str, first_column: str) -> set[str]:
    return {code for row in _table(heading, first_column) for code in _codes(row[0])}


def _values(enum: type[Enum]) -> set[str]:
    return {member.value for member in enum}


@pytest.mark.parametrize(
    ("heading", "enum"),
    [("### 5.1", ErrorCode), ("### 5.2", RetrievalErrorCode), ("### 5.3", BackgroundErrorCode)],
)
def test_error_code_tables_match_the_enums(heading: str, enum: type[Enum]) -> None:
    assert _first_column(heading, "`errorCode`") == _values(enum)


def test_http_status_table_matches_the_status_map() -> None:
    documented = {code: row[1].split(",")[0] for row in _table("## 11.", "code") for code in _codes(row[0])}
    assert documented == {code: str(status) for code, status in STATUS.items()}
    assert set(STATUS) <= _values(ErrorCode) | _values(RetrievalErrorCode)


class _StubService:
    """Enough of FlowbabyService for Bridge and create_app to build their tables."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_bridge_method_table_matches_the_bridge() -> None:
    methods = Bridge(_StubService(), ProtocolWriter(io.BytesIO()), 1.0).methods
    assert _first_column("## 3. Methods", "Method") == set(methods)


def test_notification_table_matches_what_the_bridge_sends() -> None:
    sent = set(re.findall(r'\.notify\("(\w+)"', Path(bridge.server.__file__).read_text(encoding="utf-8")))
    assert _first_column("## 4. Notifications", "Method") == sent


def _route(text: str) -> str:
    """`GET /api/agent/search?q=&limit=` or `POST /api/agent/retrieve[?format=markdown]` ->
    `GET /api/agent/search`; path parameters are compared without their names."""
    method, path = text.split(" ", 1)
    path = re.sub(r"\{[^}]*\}", "{}", re.split(r"[?\[]", path)[0])
    return f"{method} {path}"


def test_endpoint_table_matches_the_app_routes() -> None:
    app = create_app(_StubService(), "token")  # type: ignore[arg-type]
    served = {
        _route(f"{method} {route.path}")
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    documented = {_route(endpoint) for endpoint in _first_column("## 11.", "endpoint")}
    # The MCP app is mounted as one route that answers its own methods (POST, GET, DELETE).
    mounted = {route.path for route in app.routes if isinstance(route, Route) and route.methods is None}
    assert mounted == {"/mcp"}
    for path in mounted:
        assert {f"{method} {path}" for method in ("POST", "GET", "DELETE")} <= documented
    assert {row for row in documented if row.split(" ", 1)[1] not in mounted} == served
