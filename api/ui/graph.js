// The graph drawn on a canvas: a force layout with grid-bucketed repulsion (linear in the nodes, so
// 2,000 nodes lay out in a few hundred milliseconds), pan by drag or arrows, zoom by wheel or +/-,
// click a node to pick it. drawGraph returns {highlight(id), position(id), stop()}; the functions
// below share one state object `g` (canvas, view, nodes, edges, highlight, layout progress).
const COLOURS = { memory: "#0b57d0", plan: "#7a4f00", entity: "#146c2e", topic: "#8e24aa" };
const cellKey = (gx, gy) => (gx + 32768) * 65536 + (gy + 32768);
const radius = (n) => (n.kind === "memory" ? 6 : 3 + Math.min(6, Math.sqrt(n.degree)));

/** Nodes start on a spiral; an edge joins two distinct known nodes and counts to both degrees. */
function layoutOf(snapshot) {
  const nodes = snapshot.nodes.map((n, i) => ({ ...n, i, x: Math.cos(i * 2.399) * Math.sqrt(i + 1) * 18, y: Math.sin(i * 2.399) * Math.sqrt(i + 1) * 18, vx: 0, vy: 0, degree: 0 }));
  const index = new Map(nodes.map((n) => [n.id, n]));
  const edges = [];
  for (const e of snapshot.edges) {
    const a = index.get(e.source), b = index.get(e.target);
    if (a && b && a !== b) { edges.push([a, b]); a.degree++; b.degree++; }
  }
  return { nodes, index, edges };
}

/** Repulsion between nodes in neighbouring grid cells only (the grid keeps it linear). */
function repel(nodes, alpha) {
  const cell = 60, grid = new Map();
  for (const n of nodes) {
    const key = cellKey(Math.floor(n.x / cell), Math.floor(n.y / cell));
    const bucket = grid.get(key);
    if (bucket) bucket.push(n); else grid.set(key, [n]);
  }
  for (const n of nodes) {
    const gx = Math.floor(n.x / cell), gy = Math.floor(n.y / cell);
    for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
      const bucket = grid.get(cellKey(gx + dx, gy + dy));
      if (!bucket) continue;
      for (const m of bucket) {
        if (m.i <= n.i) continue;
        let ddx = n.x - m.x, ddy = n.y - m.y;
        const d2 = ddx * ddx + ddy * ddy || 0.01;
        if (d2 > cell * cell) continue;
        const f = (900 / d2) * alpha;
        ddx *= f; ddy *= f;
        n.vx += ddx; n.vy += ddy; m.vx -= ddx; m.vy -= ddy;
      }
    }
  }
}

/** One step of the layout: repulsion, springs along the edges, a pull to the centre, damping. */
function step({ nodes, edges }, alpha) {
  repel(nodes, alpha);
  for (const [a, b] of edges) {
    const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
    const f = ((d - 40) / d) * 0.05 * alpha;
    a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
  }
  for (const n of nodes) {
    n.vx -= n.x * 0.002 * alpha; n.vy -= n.y * 0.002 * alpha;
    n.x += Math.max(-20, Math.min(20, n.vx)); n.y += Math.max(-20, Math.min(20, n.vy));
    n.vx *= 0.6; n.vy *= 0.6;
  }
}

function fit({ nodes, canvas, view }) {
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const n of nodes) { minX = Math.min(minX, n.x); minY = Math.min(minY, n.y); maxX = Math.max(maxX, n.x); maxY = Math.max(maxY, n.y); }
  const w = canvas.clientWidth, h = canvas.clientHeight;
  view.k = Math.min(2, 0.9 * Math.min(w / (maxX - minX || 1), h / (maxY - minY || 1)));
  view.x = w / 2 - view.k * (minX + maxX) / 2;
  view.y = h / 2 - view.k * (minY + maxY) / 2;
}

function drawEdges({ ctx, view, edges, highlighted }) {
  ctx.lineWidth = 1 / view.k;
  ctx.strokeStyle = "rgba(80, 90, 100, 0.25)";
  ctx.beginPath();
  for (const [a, b] of edges) { ctx.moveTo(a.x, a.y); ctx.lineTo(b.x, b.y); }
  ctx.stroke();
  if (highlighted) {
    ctx.strokeStyle = "rgba(180, 0, 78, 0.8)";
    ctx.lineWidth = 2 / view.k;
    ctx.beginPath();
    for (const [a, b] of edges) if (a === highlighted || b === highlighted) { ctx.moveTo(a.x, a.y); ctx.lineTo(b.x, b.y); }
    ctx.stroke();
  }
}

function drawNodes({ ctx, view, nodes, highlighted, neighbours }) {
  for (const n of nodes) {
    const r = radius(n);
    ctx.fillStyle = COLOURS[n.kind === "entity" && n.entity_type === "topic" ? "topic" : n.kind] || "#4d5560";
    ctx.globalAlpha = highlighted && n !== highlighted && !neighbours.has(n) ? 0.25 : 1;
    ctx.beginPath();
    ctx.arc(n.x, n.y, r, 0, Math.PI * 2);
    ctx.fill();
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = "#1b1f24";
  ctx.font = `${12 / view.k}px system-ui, sans-serif`;
  const labelled = nodes.length < 150 || view.k > 1.5;
  for (const n of nodes) {
    if (labelled || n === highlighted || neighbours.has(n) || n.degree > 12) ctx.fillText(String(n.name).slice(0, 32), n.x + radius(n) + 2, n.y + 4 / view.k);
  }
}

function draw(g) {
  const { canvas, ctx, view } = g;
  const ratio = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * ratio)) { canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio); }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.translate(view.x, view.y);
  ctx.scale(view.k, view.k);
  drawEdges(g);
  drawNodes(g);
}

/** The node under a screen point (within its radius plus 6 pixels), or null. */
function nodeAt({ canvas, view, nodes }, clientX, clientY) {
  const rect = canvas.getBoundingClientRect();
  const x = (clientX - rect.left - view.x) / view.k, y = (clientY - rect.top - view.y) / view.k;
  let best = null, bestD = Infinity;
  for (const n of nodes) {
    const d = (n.x - x) ** 2 + (n.y - y) ** 2;
    if (d < bestD) { best = n; bestD = d; }
  }
  return best && Math.sqrt(bestD) <= radius(best) + 6 / view.k ? best : null;
}

function zoom(g, factor, cx = g.canvas.clientWidth / 2, cy = g.canvas.clientHeight / 2) {
  const { view } = g;
  view.x = cx - (cx - view.x) * factor; view.y = cy - (cy - view.y) * factor; view.k *= factor;
  draw(g);
}

/** Drag to pan (a click without a drag picks a node), wheel or +/- to zoom, arrows to pan. */
function listen(g, onPick) {
  const { canvas, view } = g;
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }; });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) drag.moved = true;
    view.x = drag.vx + e.clientX - drag.x; view.y = drag.vy + e.clientY - drag.y;
    if (g.frame >= g.iterations) draw(g);
  });
  canvas.addEventListener("pointerup", (e) => {
    const clicked = drag && !drag.moved;
    drag = null;
    if (!clicked) return;
    const node = nodeAt(g, e.clientX, e.clientY);
    if (node && onPick) onPick(node);
  });
  canvas.addEventListener("wheel", (e) => { e.preventDefault(); zoom(g, e.deltaY < 0 ? 1.2 : 1 / 1.2, e.offsetX, e.offsetY); }, { passive: false });
  canvas.addEventListener("keydown", (e) => {
    const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
    if (moves[e.key]) { view.x += moves[e.key][0]; view.y += moves[e.key][1]; }
    else if (e.key === "+" || e.key === "=") zoom(g, 1.2);
    else if (e.key === "-") zoom(g, 1 / 1.2);
    else return;
    e.preventDefault();
    draw(g);
  });
}

export function drawGraph(canvas, snapshot, { onPick } = {}) {
  const g = { canvas, ctx: canvas.getContext("2d"), view: { x: 0, y: 0, k: 1 }, ...layoutOf(snapshot) };
  Object.assign(g, { highlighted: null, neighbours: new Set(), alive: true, frame: 0, iterations: g.nodes.length > 800 ? 150 : 300 });

  // Layout steps for up to 24 ms per animation frame, refitting and redrawing after each batch.
  function tick() {
    if (!g.alive) return;
    const started = performance.now();
    while (g.frame < g.iterations && performance.now() - started < 24) step(g, 1 - g.frame++ / g.iterations);
    if (g.frame <= g.iterations) fit(g);
    draw(g);
    if (!canvas.dataset.drawn) canvas.dataset.drawn = String(performance.now());
    if (g.frame < g.iterations) requestAnimationFrame(tick);
    else canvas.dataset.settled = "true";
  }

  listen(g, onPick);
  requestAnimationFrame(tick);
  return {
    highlight(id) {
      g.highlighted = g.index.get(id) || null;
      g.neighbours = new Set();
      for (const [a, b] of g.edges) { if (a === g.highlighted) g.neighbours.add(b); if (b === g.highlighted) g.neighbours.add(a); }
      draw(g);
    },
    /** Screen position of a node (tests click it). */
    position(id) {
      const n = g.index.get(id), rect = canvas.getBoundingClientRect();
      return n ? { x: rect.left + g.view.x + n.x * g.view.k, y: rect.top + g.view.y + n.y * g.view.k } : null;
    },
    stop() { g.alive = false; },
  };
}
