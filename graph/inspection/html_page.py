"""A self-contained interactive HTML view of a graph: one file, no CDN, works offline.

Positions come from graph.inspection.layout (seeded, so the same graph draws the same way);
the page itself only pans, zooms, drags nodes, highlights a node's
neighbours and filters by name, in a few lines of plain JavaScript over SVG.
"""

from __future__ import annotations

import html
import json

import networkx as nx

from graph.inspection.layout import positions
from graph.inspection.style import TYPE_COLOURS, node_category, node_colour, node_label

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{margin:0;font:13px system-ui,sans-serif;display:flex;height:100vh}
#side{width:290px;padding:10px;overflow:auto;border-right:1px solid #ddd;box-sizing:border-box}
#view{flex:1}svg{width:100%;height:100%;cursor:grab}
.edge{stroke:#999;stroke-opacity:.5}.edge.supersedes{stroke-dasharray:5 4;stroke:#444}
.node circle{stroke:#333;stroke-width:1}.node.superseded circle{stroke-dasharray:3 2}
.node text{font-size:10px;pointer-events:none}.dim{opacity:.12}
.legend span{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:5px}
pre{white-space:pre-wrap;word-break:break-word}
</style></head><body>
<div id="side"><h3>__TITLE__</h3><p>__SUMMARY__</p>
<input id="find" placeholder="filter by name" style="width:100%"><div id="info"><p>Click a node.</p></div>
<div class="legend">__LEGEND__</div></div>
<div id="view"><svg id="svg"><g id="world"></g></svg></div>
<script>
const G = __DATA__;
const NS = "http://www.w3.org/2000/svg", world = document.getElementById("world"), svg = document.getElementById("svg");
let scale = 1, tx = 0, ty = 0;
const apply = () => world.setAttribute("transform", `translate(${tx},${ty}) scale(${scale})`);
const byId = new Map(G.nodes.map(n => [n.id, n]));
const adjacent = new Map(G.nodes.map(n => [n.id, new Set()]));
const edgeEls = G.edges.map(e => {
  adjacent.get(e.source).add(e.target); adjacent.get(e.target).add(e.source);
  const line = document.createElementNS(NS, "line");
  line.setAttribute("class", "edge " + e.relation);
  line.appendChild(document.createElementNS(NS, "title")).textContent = e.relation;
  world.appendChild(line); return [line, e];
});
const nodeEls = G.nodes.map(n => {
  const g = document.createElementNS(NS, "g");
  g.setAttribute("class", "node" + (n.status === "Superseded" ? " superseded" : ""));
  const c = g.appendChild(document.createElementNS(NS, "circle"));
  c.setAttribute("r", n.kind === "memory" ? 9 : 6); c.setAttribute("fill", n.colour);
  const t = g.appendChild(document.createElementNS(NS, "text"));
  t.setAttribute("x", 10); t.setAttribute("y", 4); t.textContent = n.label;
  world.appendChild(g); g.addEventListener("mousedown", ev => startDrag(ev, n));
  g.addEventListener("click", () => select(n)); return [g, n];
});
function draw() {
  for (const [line, e] of edgeEls) {
    const a = byId.get(e.source), b = byId.get(e.target);
    line.setAttribute("x1", a.x); line.setAttribute("y1", a.y);
    line.setAttribute("x2", b.x); line.setAttribute("y2", b.y);
  }
  for (const [g, n] of nodeEls) g.setAttribute("transform", `translate(${n.x},${n.y})`);
}
function select(n) {
  const near = adjacent.get(n.id);
  for (const [g, m] of nodeEls) g.classList.toggle("dim", m.id !== n.id && !near.has(m.id));
  for (const [line, e] of edgeEls) line.classList.toggle("dim", e.source !== n.id && e.target !== n.id);
  const info = document.getElementById("info"); info.textContent = "";
  info.appendChild(document.createElement("h4")).textContent = n.label;
  info.appendChild(document.createElement("pre")).textContent = JSON.stringify(n.data, null, 1);
}
document.getElementById("find").addEventListener("input", ev => {
  const q = ev.target.value.toLowerCase();
  for (const [g, n] of nodeEls) g.classList.toggle("dim", q !== "" && !n.label.toLowerCase().includes(q));
});
let drag = null, pan = null;
function startDrag(ev, n) { ev.stopPropagation(); drag = {n, x: ev.clientX, y: ev.clientY}; }
svg.addEventListener("mousedown", ev => { pan = {x: ev.clientX - tx, y: ev.clientY - ty}; });
window.addEventListener("mousemove", ev => {
  if (drag) { drag.n.x += (ev.clientX - drag.x) / scale; drag.n.y += (ev.clientY - drag.y) / scale;
              drag.x = ev.clientX; drag.y = ev.clientY; draw(); }
  else if (pan) { tx = ev.clientX - pan.x; ty = ev.clientY - pan.y; apply(); }
});
window.addEventListener("mouseup", () => { drag = pan = null; });
svg.addEventListener("wheel", ev => {
  ev.preventDefault(); const f = ev.deltaY < 0 ? 1.15 : 1 / 1.15;
  tx = ev.offsetX - (ev.offsetX - tx) * f; ty = ev.offsetY - (ev.offsetY - ty) * f; scale *= f; apply();
}, {passive: false});
svg.addEventListener("dblclick", () => { for (const [el] of [...nodeEls, ...edgeEls]) el.classList.remove("dim"); });
tx = 40; ty = 40; apply(); draw();
</script></body></html>
"""


def render_html(graph: nx.MultiDiGraph, title: str = "flowbaby graph") -> str:
    """The page for `graph`, with every node's attributes shown on click."""
    size = max(600.0, 60.0 * len(graph) ** 0.5)
    layout = positions(graph)
    nodes = [
        {
            "id": node,
            "label": node_label(data, node, 48),
            "kind": data.get("kind", ""),
            "status": data.get("status", ""),
            "colour": node_colour(data),
            "x": round(float(layout[node][0] + 1) * size / 2, 1),
            "y": round(float(layout[node][1] + 1) * size / 2, 1),
            "data": data,
        }
        for node, data in graph.nodes(data=True)
    ]
    edges = [
        {"source": src, "target": dst, "relation": str(data.get("relation", key))}
        for src, dst, key, data in graph.edges(keys=True, data=True)
    ]
    present = {node_category(data) for _, data in graph.nodes(data=True)}
    legend = "<br>".join(
        f'<span style="background:{colour}"></span>{html.escape(name)}'
        for name, colour in TYPE_COLOURS.items()
        if name in present
    )
    memories = sum(1 for _, d in graph.nodes(data=True) if d.get("kind") == "memory")
    summary = f"{memories} memories, {len(graph) - memories} other nodes, {graph.number_of_edges()} relations"
    # "</" inside the JSON would end the script element early.
    data = json.dumps({"nodes": nodes, "edges": edges}, ensure_ascii=False, default=str).replace("</", "<\\/")
    return (
        _PAGE.replace("__TITLE__", html.escape(title))
        .replace("__SUMMARY__", summary)
        .replace("__LEGEND__", legend)
        .replace("__DATA__", data)
    )
