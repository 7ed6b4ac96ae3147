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
)
from graph.inspection.names import TopicNotFound
from graph.inspection.snapshot import whole_snapshot

if TYPE_CHECKING:  # networkx's (~20 MB resident) only when a graph is inspected: see graph.api.__getattr__
    from graph.inspection.workspace_graph import WorkspaceGraph
from graph.engine.state import EngineState


class Inspection(EngineState):
    """graphSnapshot, graph summary, auditTail."""

    async def graph_snapshot(self, request: GraphSnapshotRequest) -> GraphSnapshotResponse:
        """Node-link JSON of the graph, or of one topic's neighbourhood (every version of the
        topic and what lies within `hops` edges of it). Memories still waiting for their
        graph are included as nodes without edges."""

        if request.topicId is None:
            return await asyncio.to_thread(self._whole_graph_snapshot, request.hops)

        def build() -> dict[str, Any]:
            try:
                return self._graph_view().snapshot(request.topicId, request.hops)
            except TopicNotFound:
                raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{request.topicId}"') from None

        snapshot = await asyncio.to_thread(build)
        return GraphSnapshotResponse.model_validate({"topicId": request.topicId, "hops": request.hops, **snapshot})

    def _whole_graph_snapshot(self, hops: int) -> GraphSnapshotResponse:
        """The whole graph, built again only when the projection was saved since (its stamp) or a version
        was stored, forgotten or changed status or graph state (by this process, the worker or another
        server): the memory browser's overview then costs a comparison, not a build."""
        states = self.store.memory_states()
        cached = self._whole_graph
        if cached and cached[0] == self.projection.stamp() and cached[1] == states:
            return cached[2] if cached[2].hops == hops else cached[2].model_copy(update={"hops": hops})
        stamp, data = self.projection.read()
        snapshot = whole_snapshot(data, self.store.iter_memories())
        reply = GraphSnapshotResponse.model_validate({"topicId": None, "hops": hops, **snapshot})
        self._whole_graph = (stamp, states, reply)
        return reply

    def _graph_view(self) -> WorkspaceGraph:
        from graph.inspection.workspace_graph import WorkspaceGraph

        return WorkspaceGraph(
            load_graph(self.projection), self.store.iter_memories(), self.store.operations(("failed",))
        )

    async def graph_summary(self, top: int = 10) -> GraphStatsResponse:
        """Counts, top entities by degree, the largest components and the memories whose
        graph is missing or failed."""
        stats = await asyncio.to_thread(lambda: self._graph_view().stats(top))
        return GraphStatsResponse.model_validate(stats)

    async def audit_tail(self, request: AuditTailRequest) -> AuditTailResponse:
        """The newest audit entries (who did what, when; never memory text), for the memory browser."""
        entries = [shown for e in await asyncio.to_thread(self.audit.tail, request.limit) if (shown := audit_shown(e))]
        return AuditTailResponse.model_validate({"entries": entries, "count": len(entries)})


def audit_shown(entry: dict[str, Any]) -> dict[str, Any] | None:
    """An audit line in the reply's shape: fields the reply does not name (written by another
    version) are left out, and a line without the ones it needs is skipped."""
    fields = AuditTailEntry.model_fields
    try:
        return AuditTailEntry.model_validate({k: v for k, v in entry.items() if k in fields}).model_dump(mode="json")
    except ValueError:
        return None
