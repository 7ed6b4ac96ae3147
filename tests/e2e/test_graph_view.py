"""The memory browser's graph at 2,000 entities, in headless chromium against a real `flowbaby serve`
(started by `flowbaby ui`) on a workspace whose projection is generated: the overview is drawn within a
second of opening the page (the server's first graph since it started) and of choosing it again, groups
its nodes by type, labels only what fits (no two visible labels overlap), and search-to-focus shows an
entity's neighbourhood with every node shown labelled. tests/e2e/browser/graph.js drives the page (and
takes the docs/ screenshots with FLOWBABY_UPDATE_SCREENSHOT); axe-core runs on both views.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from graph.core.workspace import WorkspacePaths
from tests.e2e.graph_labels import no_overlap
from tests.support.browser_driver import drive, require_driver, shots, ui_started
from tests.support.vscode_tools import chromium

pytestmark = pytest.mark.slow

ENTITIES, MEMORIES = 2000, 300
TYPES = ["technology", "concept", "component", "file", "person", "ticket", "organisation", "date"]


def _projection(root: Path) -> dict[str, str]:
    """A projection file as the worker saves it: MEMORIES memories mentioning ENTITIES entities of a few
    types (a long tail: some entities in many memories), and relations between entities. Returns the
    entity the test focuses, by name and id."""
    rng = random.Random(49)
    memories = [
        {"id": f"memory:m{i}", "kind": "memory", "name": f"Decision record {i}", "topic_id": f"topic-{i}", "version": 1}
        | {"status": "Active", "plan_id": "", "session_id": "", "created_at": "2026-01-01T00:00:00Z"}
        | {"graph_state": "indexed"}
        for i in range(MEMORIES)
    ]
    sources: list[set[str]] = [set() for _ in range(ENTITIES)]
    edges = []
    for i in range(MEMORIES):
        hubs = {min(ENTITIES - 1, int(rng.paretovariate(0.7))) for _ in range(4)}
        for j in hubs | set(rng.sample(range(ENTITIES), 5)):
            sources[j].add(f"m{i}")
            edges.append({"source": f"memory:m{i}", "target": f"entity:{j}", "key": "mentions", "relation": "mentions"})
    related = {tuple(rng.sample(range(ENTITIES), 2)) for _ in range(600)}  # one edge a pair, as networkx saves
    for a, b in sorted(related):
        edges.append({"source": f"entity:{a}", "target": f"entity:{b}", "key": "relates_to", "relation": "relates_to"})
    entities = [
        {"id": f"entity:{j}", "kind": "entity", "name": f"{TYPES[j % len(TYPES)]} {j} of the platform"[:28]}
        | {"entity_type": TYPES[j % len(TYPES)], "description": "", "sources": sorted(sources[j])}
        for j in range(ENTITIES)
    ]
    data = {"directed": True, "multigraph": True, "graph": {}, "nodes": memories + entities, "edges": edges}
    paths = WorkspacePaths(root)
    paths.projection.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths.projection.write_text(json.dumps(data))
    paths.projection.chmod(0o600)
    return {"name": entities[1]["name"], "id": entities[1]["id"]}


@pytest.mark.alone  # asserts a latency bound (a cold draw under 1 s): 1,020 ms beside the parallel tier on 2 cores
def test_graph_overview_and_neighbourhood_at_2000_entities(tmp_path: Path) -> None:
    require_driver()
    root = tmp_path / "ws"
    root.mkdir()
    focus = _projection(root)
    with ui_started(root) as (ui, _):
        link = ui.stdout.strip().splitlines()[-1]
        config = {"chromium": chromium(), "link": link, "base": link.split("/ui/")[0], "shots": shots()}
        config |= {"focus": focus["name"], "suffix": "-2000", "still": [focus["id"], "memory:m0", "entity:1999"]}
        seen = drive("graph.js", config, tmp_path)
    timings = {k: seen[k] for k in ("coldMs", "coldFetchMs", "drawMs", "fetchMs")}
    print(json.dumps({**timings, "labels": len(seen["overview"])}))
    assert seen["nodes"] == ENTITIES + MEMORIES
    # Drawn within a second cold: a new page opened on the graph, the server asked for it the first time
    # since it started, from the navigation's start to the overview painted (its layout is final: no
    # simulation moves it afterwards). Warm (the view chosen again from the menu), every time.
    assert seen["coldMs"] < 1000, seen["coldMs"]
    assert max(seen["drawMs"]) < 1000, seen["drawMs"]
    assert seen["still"][0] == seen["still"][1] and all(seen["still"][0]), seen["still"]
    # Grouped by type: a legend entry per type, colours distinct.
    assert {g["name"] for g in seen["groups"]} == {*TYPES, "memory"}
    assert len({g["colour"] for g in seen["groups"]}) == len(seen["groups"])
    # The overview labels a few, the most connected first; none overlaps another.
    no_overlap(seen["overview"])
    assert 5 <= len(seen["overview"]) <= 40
    # Search-to-focus: the entity's neighbourhood, every node shown labelled, none overlapping.
    assert seen["focused"]["picked"] == focus["name"]
    no_overlap(seen["focused"]["labels"])
    assert {box["id"] for box in seen["focused"]["labels"]} == set(seen["focused"]["shown"])
    assert focus["id"] in seen["focused"]["shown"] and len(seen["focused"]["shown"]) > 5
    no_overlap(seen["focused"]["keyboard"])
    serious = {v: [x for x in found if x["impact"] in ("serious", "critical")] for v, found in seen["axe"].items()}
    assert set(serious) == {"graph-overview", "graph-focus"} and not any(serious.values()), serious
    assert not seen["blocked"] and not [line for line in seen["console"] if "pageerror" in line]
