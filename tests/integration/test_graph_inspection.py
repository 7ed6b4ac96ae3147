"""Graph inspection: export formats, stats, the PNG, graphSnapshot and the notebook.

The slow tests share one workspace built through a real bridge (cognee, offline
extractor); a last memory is staged and its bridge killed, so the workspace also holds
a memory still waiting for its graph, as a real one would after a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import networkx as nx
import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from graph.api import adopt_workspace
from graph.core.contract import MemoryStatus, OperationStatus
from graph.core.graph_projection import memory_node
from graph.core.memories import Memory, memory_uuid
from graph.inspection.workspace_graph import TopicNotFound, WorkspaceGraph
from tests.support.built_workspaces import built_copy
from tests.support.commands import run_flowbaby
from tests.support.fakes import memory as fake_memory
from tests.support.retrieval_fixtures import MULTI_HOP_FIRST, MULTI_HOP_SECOND, MULTI_HOP_SET, memory

WAITING_TOPIC = "waiting-topic"


def _memory(
    topic_id: str, version: int, state: str = "indexed", status: str = "Active", operation_id: str | None = None
) -> Memory:
    return fake_memory(
        memory_uuid(topic_id, version),
        topic_id=topic_id,
        version=version,
        status=MemoryStatus(status),
        topic=topic_id.title(),
        context="",
        created=f"2025-03-0{version}T10:00:00.000Z",
        operation_id=operation_id,
        graph_state=state,
    )


def _small_view() -> WorkspaceGraph:
    """Two topics sharing a ticket, a second version of one, a failed and a pending memory."""
    memories = [
        _memory("a", 1, status="Superseded"),
        _memory("a", 2),
        _memory("b", 1),
        _memory("c", 1, state="failed", operation_id="op_failed"),
        _memory("d", 1, state="pending"),
    ]
    projection = nx.MultiDiGraph()
    for m in memories[:3]:
        projection.add_node(
            memory_node(m.memory_id),
            kind="memory",
            name=m.topic,
            topic_id=m.topic_id,
            version=m.version,
            status="Active",
        )
    projection.add_node(
        "e-ticket",
        kind="entity",
        name="plat-1",
        entity_type="issue",
        sources=[memories[1].memory_id, memories[2].memory_id],
    )
    projection.add_node("e-lonely", kind="entity", name="lonely", entity_type="concept", sources=[])
    projection.add_edge(memory_node(memories[1].memory_id), "e-ticket", key="mentions", relation="mentions")
    projection.add_edge(memory_node(memories[2].memory_id), "e-ticket", key="mentions", relation="mentions")
    projection.add_edge(
        memory_node(memories[1].memory_id), memory_node(memories[0].memory_id), key="supersedes", relation="supersedes"
    )
    failed = OperationStatus(
        operationId="op_failed",
        status="failed",
        memoryIds=[memories[3].memory_id],
        topicIds=["c"],
        createdAt="2025-03-01T10:00:00.000Z",
        errorCode="COGNIFY_FAILED",
    )
    return WorkspaceGraph(projection, memories, [failed])


def test_store_state_joins_the_projection() -> None:
    view = _small_view()
    # The store is the truth for status and graph state; staged memories appear without edges.
    assert view.graph.nodes[memory_node(memory_uuid("a", 1))]["status"] == "Superseded"
    assert view.graph.degree(memory_node(memory_uuid("d", 1))) == 0
    waiting = {(w["topicId"], w["graphState"], w["errorCode"]) for w in view.waiting_memories()}
    assert waiting == {("c", "failed", "COGNIFY_FAILED"), ("d", "pending", None)}
    stats = view.stats()
    assert (stats["memories"], stats["memoriesInGraph"], stats["entities"]) == (5, 3, 2)
    assert stats["topEntities"][0]["name"] == "plat-1" and stats["topEntities"][0]["topics"] == ["a", "b"]
    assert stats["components"][0]["memories"] == 3  # a v1, a v2 and b, joined by the ticket
    assert view.degree_distribution() == {0: 1, 2: 1}


def test_paths_chains_and_neighbourhoods() -> None:
    view = _small_view()
    steps = view.explain_path("a", "b")
    assert [s["name"] for s in steps] == ["A", "plat-1", "B"]
    assert [s.get("relation") for s in steps] == [None, "mentions", "mentions (reverse)"]
    assert view.explain_path("a", "d") == []
    assert [v["version"] for v in view.supersession_chains()[0]["versions"]] == [1, 2]
    assert set(view.neighbourhood("b", hops=1)) == {memory_node(memory_uuid("b", 1)), "e-ticket"}
    wide = view.neighbourhood("b", hops=3)
    assert memory_node(memory_uuid("a", 1)) in wide
    assert list(wide) == [n for n in view.graph if n in wide]  # the graph's order, not a set's: stable pictures
    with pytest.raises(TopicNotFound):
        view.neighbourhood("nope")


def test_exports_round_trip(tmp_path: Path) -> None:
    view = _small_view()
    graphml = nx.read_graphml(view.export("graphml", tmp_path / "g.graphml"), force_multigraph=True)
    assert (graphml.number_of_nodes(), graphml.number_of_edges()) == (
        view.graph.number_of_nodes(),
        view.graph.number_of_edges(),
    )
    assert graphml.nodes["e-ticket"]["sources"] == ",".join(view.graph.nodes["e-ticket"]["sources"])
    data = json.loads(view.export("json", tmp_path / "g.json").read_text())
    back = nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    assert dict(back.nodes(data=True)) == dict(view.graph.nodes(data=True))
    assert sorted(back.edges(keys=True)) == sorted(view.graph.edges(keys=True))
    page = view.export("html", tmp_path / "g.html").read_text()
    assert "<script src" not in page and "<link" not in page and "https://" not in page
    embedded = json.loads(page.split("const G = ", 1)[1].split(";\nconst NS", 1)[0])
    assert len(embedded["nodes"]) == view.graph.number_of_nodes()
    assert len(embedded["edges"]) == view.graph.number_of_edges()


# -- on a real workspace ----------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MULTI_HOP_SET and a second version of its first memory with their graph built (a copy of the
    run's one build, see tests.support.built_workspaces), then one more memory staged right before
    its owner dies; a copy taken before that stays in `settled`."""
    folder = tmp_path_factory.mktemp("inspect")
    workspace = built_copy(tmp_path_factory, "multi-hop-revised", folder / "ws")
    shutil.copytree(workspace, folder / "settled")  # the graph built, nothing waiting
    adopt_workspace(folder / "settled")  # the seals bind the folder: a copy elsewhere is the user's by `flowbaby adopt`
    env = {**os.environ, "FLOWBABY_MAX_RUNNING": "20", "FLOWBABY_MAX_QUEUED": "50"}
    client = BridgeClient(workspace, env=env, stderr=subprocess.DEVNULL)
    try:
        # Staged, then the owner dies before the graph is built.
        waiting = memory(WAITING_TOPIC, "Waiting memory", "Staged right before a crash.", "2025-04-01T10:00:00Z")
        assert client.result("ingestForAgent", waiting)["staged"]
    finally:
        client.kill()
    return workspace


def _flowbaby(*args: str) -> subprocess.CompletedProcess[str]:
    return run_flowbaby(*args, timeout=120)


@pytest.mark.slow
def test_cli_exports_stats_and_show(built: Path, tmp_path: Path) -> None:
    view = WorkspaceGraph.load(built)
    for fmt in ("graphml", "json", "html"):
        out = tmp_path / f"graph.{fmt}"
        assert (
            _flowbaby("graph", "export", "--workspace", str(built), "--format", fmt, "--out", str(out)).returncode == 0
        )
    graphml = nx.read_graphml(tmp_path / "graph.graphml", force_multigraph=True)
    assert (graphml.number_of_nodes(), graphml.number_of_edges()) == (
        view.graph.number_of_nodes(),
        view.graph.number_of_edges(),
    )
    back = nx.node_link_graph(json.loads((tmp_path / "graph.json").read_text()), edges="edges")
    assert sorted(back.edges(keys=True)) == sorted(view.graph.edges(keys=True))

    stats = json.loads(_flowbaby("graph", "stats", "--workspace", str(built), "--json").stdout)
    assert stats["memories"] == len(MULTI_HOP_SET) + 2 and stats["memoriesInGraph"] == len(MULTI_HOP_SET) + 1
    assert [(w["topicId"], w["graphState"]) for w in stats["waiting"]] == [(WAITING_TOPIC, "pending")]
    ticket = next(e for e in view.top_entities(50) if e["name"] == "plat-2291")
    assert {MULTI_HOP_FIRST, MULTI_HOP_SECOND} <= set(ticket["topics"])
    text = _flowbaby("graph", "stats", "--workspace", str(built)).stdout
    assert "memories without a graph: 1" in text and WAITING_TOPIC in text

    png = tmp_path / "ledger.png"
    shown = _flowbaby("graph", "show", "--workspace", str(built), "--topic", MULTI_HOP_FIRST, "--out", str(png))
    assert shown.returncode == 0, shown.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    missing = _flowbaby("graph", "show", "--workspace", str(built), "--topic", "nope", "--out", str(png))
    assert missing.returncode == 1 and "no memory with topicId nope" in missing.stderr


@pytest.mark.slow
def test_notebook_runs_headless(built: Path, tmp_path: Path) -> None:
    import base64

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(PROJECT_ROOT / "notebooks" / "graph_inspection.ipynb", as_version=4)
    assert "parameters" in notebook.cells[0].metadata.get("tags", [])
    notebook.cells[0].source = (
        f"WORKSPACE = {str(built)!r}\nTOPIC = {MULTI_HOP_FIRST!r}\n"
        f"PATH_FROM, PATH_TO = {MULTI_HOP_FIRST!r}, {MULTI_HOP_SECOND!r}"
    )
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises on any cell error
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [base64.b64decode(o.data["image/png"]) for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2 and all(image[:4] == b"\x89PNG" and len(image) > 5_000 for image in images)
    text = "".join(o.get("text", "") for o in outputs)
    assert "plat-2291" in text.lower() and "1 memories without a graph" in text
    tables = "".join(o.data.get("text/markdown", "") for o in outputs if "data" in o)
    assert WAITING_TOPIC in tables and "Superseded" in tables


@pytest.mark.slow
def test_graph_snapshot_over_the_bridge(built: Path) -> None:
    # The copy taken before the waiting memory: a bridge on `built` would start a cognee worker to
    # build that memory's graph, which nothing here reads.
    client = BridgeClient(built.parent / "settled", stderr=subprocess.DEVNULL)
    try:
        near = client.result("graphSnapshot", {"topicId": MULTI_HOP_FIRST, "hops": 1})
        graph = nx.node_link_graph(near, edges="edges")
        topics = {d.get("topic_id") for _, d in graph.nodes(data=True) if d.get("kind") == "memory"}
        assert topics == {MULTI_HOP_FIRST}  # both versions, and no other memory within one hop
        assert {"plat-2291", "e_ledger_lock"} <= {d.get("name") for _, d in graph.nodes(data=True)}
        wider = nx.node_link_graph(client.result("graphSnapshot", {"topicId": MULTI_HOP_FIRST}), edges="edges")
        assert MULTI_HOP_SECOND in {d.get("topic_id") for _, d in wider.nodes(data=True)}
        whole = client.result("graphSnapshot")
        assert len(whole["nodes"]) >= len(wider) and whole["topicId"] is None
        bad = client.result("graphSnapshot", {"hops": 9})
        assert (bad["success"], bad["errorCode"], bad["fields"]) == (False, "INVALID_REQUEST", ["hops"])
        assert client.result("graphSnapshot", {"topicId": "nope"})["errorCode"] == "NOT_FOUND"
    finally:
        client.close()
