"""The order in which `make test` hands test files to its two xdist workers: the longest first.

`--dist loadfile` gives a worker the next file in the collection's order whenever it is nearly out of work;
xdist's own order (most tests first, `--loadscope-reorder`) put the files with one or two long tests last,
so one worker ran them (HTTP fuzzing, code-server, the team graph: ~70 s) while the other had finished.
Longest first (LPT scheduling) leaves the short unit files for the end, where they even the two out.
The seconds are one worker's wall time per file in a full run (main at f064118, load ~6: about 1.8x a quiet
machine's); only their order matters. A file not listed counts as DEFAULT_SECONDS by its folder.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

FILE_SECONDS: dict[str, int] = {
    "e2e/test_memory_browser.py": 140,
    "integration/test_http_fuzz.py": 133,
    "integration/test_forget_canary.py": 115,
    "integration/test_first_hour.py": 102,
    "integration/test_graph_building.py": 100,
    "integration/test_service_lifecycle.py": 100,
    "integration/test_hardening_processes.py": 96,
    "e2e/test_always_on.py": 96,
    "integration/test_workspace_imports.py": 94,
    "e2e/test_vscode_e2e.py": 94,
    "integration/test_team_graph.py": 82,
    "e2e/test_opencode_hooks.py": 77,
    "integration/test_onnx_embedder.py": 75,
    "integration/test_user_scope.py": 73,
    "integration/test_ranking_determinism.py": 68,
    "e2e/test_mcp_conformance.py": 66,
    "e2e/test_opencode.py": 63,
    "integration/test_workspace_migrate.py": 62,
    "integration/test_team_servers.py": 62,
    "e2e/test_session_clients.py": 59,
    "e2e/test_vscode_extension.py": 58,
    "integration/test_llm_provider.py": 57,
    "integration/test_fast_cli.py": 47,
    "integration/test_team_auth.py": 47,
    "integration/test_bridge_protocol.py": 46,
    "integration/test_team_concurrent_graph.py": 45,
    "integration/test_reconcile.py": 45,
    "e2e/test_capture_store_request.py": 42,
    "integration/test_team_backend.py": 42,
    "integration/test_stop_mid_operation.py": 42,
    "integration/test_http_api.py": 41,
    "integration/test_code_import.py": 37,
    "e2e/test_claude_code.py": 37,
    "integration/test_lance_child.py": 34,
    "e2e/test_gemini_cli.py": 34,
    "integration/test_team_clients.py": 34,
    "integration/test_retrieval.py": 34,
    "integration/test_session_secrets.py": 32,
    "e2e/test_codex_cli.py": 31,
    "integration/test_file_hardening_processes.py": 30,
    "integration/test_memories_cli.py": 29,
    "integration/test_pg_faults.py": 28,
    "integration/test_graph_hop.py": 27,
    "integration/test_graph_off.py": 25,
    "integration/test_security_processes.py": 25,
    "integration/test_cli.py": 24,
    "e2e/test_user_scope_claude.py": 23,
    "integration/test_cloned_data_files.py": 22,
    "e2e/test_claude_hooks.py": 22,
    "e2e/test_browser_scope.py": 21,
    "integration/test_mcp.py": 21,
    "integration/test_graph_inspection.py": 20,
    "integration/test_team_browser_sessions.py": 20,
    "integration/test_ingest_redaction.py": 18,
}
"""Files that took >= 15 s: the sum of their tests' setup, call and teardown wall time on their worker."""

DEFAULT_SECONDS = {"e2e": 10, "integration": 10}
"""An unlisted file in these folders (a new one), before every unit file (0)."""


class _Test(Protocol):
    @property
    def nodeid(self) -> str: ...


T = TypeVar("T", bound=_Test)


def file_seconds(nodeid: str) -> int:
    """The expected seconds of the file holding the test `nodeid` ("tests/<folder>/<file>::<name>")."""
    path = nodeid.split("::", 1)[0].removeprefix("tests/")
    return FILE_SECONDS.get(path, DEFAULT_SECONDS.get(path.split("/", 1)[0], 0))


def longest_files_first(items: list[T]) -> None:
    """Sort `items` in place by their file's expected seconds, longest first; a file's tests keep their
    order and stay together (the sort is stable and a file has one weight)."""
    items.sort(key=lambda item: (-file_seconds(item.nodeid), item.nodeid.split("::", 1)[0]))
