"""Reading the workspace for people: the graph's snapshot and summary, and the audit log's tail."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from graph.backends.projection import load_graph
from graph.core.contract import (
    AuditTailEntry,
    AuditTailRequest,
    AuditTailResponse,
    ErrorCode,
    FlowbabyError,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    GraphStatsResponse,
    validate_request,
    validate_retrieval,
)
from graph.inspection.names import TopicNotFound

if TYPE_CHECKING:  # networkx's (~20 MB resident) only when a graph is inspected: see graph.api.__getattr__
    from graph.inspection.workspace_graph import WorkspaceGraph
from graph.engine.state import EngineState


class Inspection(EngineState):
    """graphSnapshot, graph summary, auditTail."""

    async def graph_snapshot(self, params: Any) -> dict[str, Any]:
        """Node-link JSON of the graph, or of one topic's neighbourhood (every version of the
        topic and what lies within `hops` edges of it). Memories still waiting for their
        graph are included as nodes without edges."""
        request: GraphSnapshotRequest = validate_retrieval(GraphSnapshotRequest, params)

        def build() -> dict[str, Any]:
            try:
                return self._graph_view().snapshot(request.topicId, request.hops)
            except TopicNotFound:
                raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{request.topicId}"') from None

        snapshot = await asyncio.to_thread(build)
        return GraphSnapshotResponse.model_validate(
            {"topicId": request.topicId, "hops": request.hops, **snapshot}
        ).model_dump(mode="json")

    def _graph_view(self) -> WorkspaceGraph:
        from graph.inspection.workspace_graph import WorkspaceGraph

        return WorkspaceGraph(
            load_graph(self.projection), self.store.iter_memories(), self.store.operations(("failed",))
        )

    async def graph_summary(self, top: int = 10) -> dict[str, Any]:
        """Counts, top entities by degree, the largest components and the memories whose
        graph is missing or failed."""
        stats = await asyncio.to_thread(lambda: self._graph_view().stats(top))
        return GraphStatsResponse.model_validate(stats).model_dump(mode="json")

    async def audit_tail(self, params: Any = None) -> dict[str, Any]:
        """The newest audit entries (who did what, when; never memory text), for the memory browser."""
        request: AuditTailRequest = validate_request(AuditTailRequest, params or {})
        entries = [shown for e in await asyncio.to_thread(self.audit.tail, request.limit) if (shown := audit_shown(e))]
        return AuditTailResponse.model_validate({"entries": entries, "count": len(entries)}).model_dump(mode="json")


def audit_shown(entry: dict[str, Any]) -> dict[str, Any] | None:
    """An audit line in the reply's shape: fields the reply does not name (written by another
    version) are left out, and a line without the ones it needs is skipped."""
    fields = AuditTailEntry.model_fields
    try:
        return AuditTailEntry.model_validate({k: v for k, v in entry.items() if k in fields}).model_dump(mode="json")
    except ValueError:
        return None
