"""The engine's face: everything the fronts (bridge/, api/, flowbaby/) may use besides the contract,
the method table and strict JSON. The engine itself lives in graph.engine; a test holds the fronts to this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graph.backends.backend import DATABASE_URL_ENV as DATABASE_URL_ENV  # for the fronts' --database-url
from graph.backends.backend import (
    NAMESPACES_DIR,
    Backend,
    namespace_for,
    open_backend,
    team_database_url,
)
from graph.backends.migrate import migrate_workspace
from graph.code.git_ignore import data_files_git_takes
from graph.code.importer import import_adrs, import_docs, within_repository
from graph.core.api_tokens import GrantCache, TokenStore, digest, issue, token_id_of, verify
from graph.core.audit import AUDIT_USER
from graph.core.files import atomic_writer, write_atomic
from graph.core.namespaces import namespace_problem
from graph.core.net import is_loopback
from graph.core.seal import read_private_file, read_sealed_file, write_seal
from graph.core.service_protocol import MemoryService
from graph.core.stdio import take_stdout
from graph.core.trust import configured_token
from graph.core.workspace import (
    API_TOKEN_PURPOSE,
    WorkspacePaths,
    check_data_folder,
    link_workspace,
    resolve_workspace,
)
from graph.engine.adoption import AdoptQuestion, adopt_workspace
from graph.engine.opening import (
    EXIT_WORKSPACE_UNAVAILABLE,
    agent_forget_enabled,
    open_service,
    open_token_store,
    start_watching,
)
from graph.engine.service import FlowbabyService
from graph.inspection.names import EXPORT_FORMATS, TopicNotFound
from graph.owner import service_record
from graph.remote import connect_workspace
from graph.search.agent_answer import answer_index, memory_whole
from graph.sessions.agent_api import SessionOp

if TYPE_CHECKING:  # networkx's (~20 MB resident) only when a graph is inspected: see __getattr__
    from graph.inspection.workspace_graph import WorkspaceGraph

__all__ = [
    "AUDIT_USER",
    "EXIT_WORKSPACE_UNAVAILABLE",
    "EXPORT_FORMATS",
    "FlowbabyService",
    "MemoryService",
    "SessionOp",
    "TopicNotFound",
    "WorkspaceGraph",
    "WorkspacePaths",
    "check_data_folder",
    "configured_token",
    "read_private_file",
    "API_TOKEN_PURPOSE",
    "AdoptQuestion",
    "adopt_workspace",
    "read_sealed_file",
    "write_seal",
    "resolve_workspace",
    "service_record",
    "connect_workspace",
    "data_files_git_takes",
    "is_loopback",
    "migrate_workspace",
    "open_service",
    "start_watching",
    "agent_forget_enabled",
    "take_stdout",
    # what an MCP client's model reads (api/mcp_tools.py): the retrieval index, a memory whole
    "answer_index",
    "memory_whole",
    # every file written whole (graph.core.files)
    "atomic_writer",
    "write_atomic",
    # flowbaby import adr|docs (flowbaby/import_command.py), flowbaby link (flowbaby/link_command.py)
    "import_adrs",
    "import_docs",
    "within_repository",
    "link_workspace",
    # the team server (api/tenancy.py, flowbaby/tokens_command.py)
    "NAMESPACES_DIR",
    "GrantCache",
    "TokenStore",
    "Backend",
    "open_backend",
    "team_database_url",
    "digest",
    "issue",
    "namespace_for",
    "namespace_problem",
    "open_token_store",
    "token_id_of",
    "verify",
]
"""What the fronts (bridge/, api/) may use besides graph.core.contract; a test holds them to it."""


def __getattr__(name: str) -> Any:
    """WorkspaceGraph for the fronts' graph commands, imported on first use (it brings networkx)."""
    if name == "WorkspaceGraph":
        from graph.inspection.workspace_graph import WorkspaceGraph

        return WorkspaceGraph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
