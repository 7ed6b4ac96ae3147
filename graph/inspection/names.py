"""The inspection API's light names, apart from the networkx code that uses them.

The owning process imports these with the service; networkx (~20 MB resident) is imported only
when a graph is actually inspected (graph.inspection.workspace_graph).
"""

from __future__ import annotations

from typing import Literal

ExportFormat = Literal["graphml", "json", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("graphml", "json", "html")


class TopicNotFound(LookupError):
    """No memory has this topicId."""
