"""The owning process's imports: what it does not load until it needs it (its idle memory)."""

from __future__ import annotations

import subprocess
import sys


def test_the_service_and_its_search_do_not_import_networkx() -> None:
    code = (
        "import sys, graph.api, graph.search.graph_lane; "
        "before = 'networkx' in sys.modules; "
        "from graph.api import WorkspaceGraph, TopicNotFound; "
        "from graph.inspection.workspace_graph import TopicNotFound as Same; "
        "print(before, 'networkx' in sys.modules, WorkspaceGraph.__name__, Same is TopicNotFound)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "WorkspaceGraph", "True"]
