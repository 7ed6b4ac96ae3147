// The graph drawn on a canvas. The overview shows structure: nodes grouped by type (each group pulled
// to its own centre and coloured), entities sized by how many memories mention them, and labels only
// where they fit: the pointer's or keyboard's node first, then the most connected. focus(id) shows one
// node's neighbourhood (one or two hops) in columns, so every label shown is readable. Labels are placed
// in screen space and never overlap (a label that would is left out); labels() reports their boxes.
// drawGraph returns {highlight, focus, overview, hover, labels, shown, groups, position, stop}.
const PALETTE = ["#146c2e", "#b3261e", "#8e24aa", "#00696d", "#a8326e", "#5f6368", "#3949ab", "#8d6e00", "#6d4c41", "#c2410c", "#0e7490"];
const FIXED = { memory: "#0b57d0", plan: "#7a4f00" };
const LABEL_FONT = "12px system-ui, sans-serif";
const OVERVIEW_LABELS = 30;
const ROW = 18;  // pixels between rows of the neighbourhood view: more than a label's height
const cellKey = (gx, gy) => (gx + 32768) * 65536 + (gy + 32768);
const groupOf = (n) => (n.kind === "entity" ? n.entity_type || "entity" : n.kind || "node");
const radius = (n) => (n.kind === "memory" ? 5 : 3 + Math.min(9, 2 * Math.sqrt(n.mentions)));

/** Nodes, edges (two distinct known nodes), neighbours and degrees; groups largest first. */
function graphOf(snapshot) {
  const nodes = snapshot.nodes.map((n, i) => ({ ...n, i, x: 0, y: 0, vx: 0, vy: 0, degree: 0, memories: 0 }));
  const index = new Map(nodes.map((n) => [n.id, n]));
  const edges = [], around = new Map(nodes.map((n) => [n, new Set()]));
  for (const e of snapshot.edges) {
    const a = index.get(e.source), b = index.get(e.target);
    if (!a || !b || a === b) continue;
    edges.push([a, b]); a.degree++; b.degree++;
    around.get(a).add(b); around.get(b).add(a);
  }
  for (const n of nodes) {
    const held = Array.isArray(n.sources) ? n.sources.length : 0;
    n.mentions = held || [...around.get(n)].filter((m) => m.kind === "memory").length;
  }
  const counts = new Map();
  for (const n of nodes) counts.set(groupOf(n), (counts.get(groupOf(n)) || 0) + 1);
  const names = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || a.localeCompare(b));
  let free = 0;
  const groups = names.map((name) => ({ name, count: counts.get(name), colour: FIXED[name] || PALETTE[free++ % PALETTE.length] }));
  return { nodes, index, edges, around, groups };
}

/** Each group's centre on a ring (the largest in the middle); its nodes start on a spiral around it. */
function placeGroups({ nodes, groups }) {
  const ring = 40 * Math.sqrt(nodes.length) + 60, byName = new Map();
  groups.forEach((group, i) => {
    const angle = (i - 1) * 2 * Math.PI / Math.max(1, groups.length - 1);
    Object.assign(group, { cx: i ? Math.cos(angle) * ring : 0, cy: i ? Math.sin(angle) * ring : 0, placed: 0 });
    byName.set(group.name, group);
  });
  for (const n of nodes) {
    const group = byName.get(groupOf(n)), k = group.placed++;
    Object.assign(n, { group, x: group.cx + Math.cos(k * 2.399) * Math.sqrt(k + 1) * 14, y: group.cy + Math.sin(k * 2.399) * Math.sqrt(k + 1) * 14 });
  }
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

/** One step of the layout: repulsion, weak springs along the edges, a pull to the group's centre. */
function step({ nodes, edges }, alpha) {
  repel(nodes, alpha);
  for (const [a, b] of edges) {
    const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
    const f = ((d - 40) / d) * 0.002 * alpha;
    a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
  }
  for (const n of nodes) {
    n.vx -= (n.x - n.group.cx) * 0.05 * alpha; n.vy -= (n.y - n.group.cy) * 0.05 * alpha;
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

/** Where a node is drawn, in world coordinates: its column in the neighbourhood view, else its layout. */
const at = (g, n) => (g.focus ? g.focus.pos.get(n) : n);

/** The neighbourhood of `centre` within `hops`, in columns by distance (memories left, the rest right);
 * each column holds what fits the canvas's height, most connected first. */
function columns(g, centre, hops) {
  const distance = new Map([[centre, 0]]);
  let ring = [centre];
  for (let d = 1; d <= hops; d++) {
    const next = [];
    for (const n of ring) for (const m of g.around.get(n)) if (!distance.has(m)) { distance.set(m, d); next.push(m); }
    ring = next;
  }
  const fits = Math.max(3, Math.floor((g.canvas.clientHeight - 2 * ROW) / ROW));
  const cols = new Map();
  for (const [n, d] of distance) {
    const col = d === 0 ? 0 : (n.kind === "memory" ? -d : d);
    if (!cols.has(col)) cols.set(col, []);
    cols.get(col).push(n);
  }
  const pos = new Map(), hidden = [];
  const width = g.canvas.clientWidth / (2 * hops + 1);
  for (const [col, list] of cols) {
    list.sort((a, b) => b.degree - a.degree || String(a.name).localeCompare(String(b.name)));
    const shown = list.slice(0, fits);
    hidden.push(...list.slice(fits));
    // Left of the centre a node sits at its column's right edge, named on its left; right of it, the
    // reverse; the centre is named above itself: no edge crosses a label.
    const side = col < 0 ? "left" : col > 0 ? "right" : "above";
    const x = side === "left" ? (col + hops + 1) * width - 12 : side === "right" ? (col + hops) * width + 12 : (hops + 0.5) * width;
    const top = (g.canvas.clientHeight - (shown.length - 1) * ROW) / 2;
    shown.forEach((n, i) => pos.set(n, { x, y: top + i * ROW, side }));
  }
  return { centre, hops, pos, hidden: hidden.length, labelWidth: width - 36 };
}

function drawEdges(g) {
  const { ctx, view, edges, focus } = g, marked = g.hovered || (focus && focus.centre);
  ctx.lineWidth = 1 / view.k;
  ctx.strokeStyle = focus ? "rgba(80, 90, 100, 0.45)" : "rgba(80, 90, 100, 0.08)";
  ctx.beginPath();
  for (const [a, b] of edges) {
    if (focus && !(focus.pos.has(a) && focus.pos.has(b))) continue;
    const p = at(g, a), q = at(g, b);
    ctx.moveTo(p.x, p.y); ctx.lineTo(q.x, q.y);
  }
  ctx.stroke();
  if (!marked) return;
  ctx.strokeStyle = "rgba(180, 0, 78, 0.8)";
  ctx.lineWidth = 2 / view.k;
  ctx.beginPath();
  for (const [a, b] of edges) {
    if ((a !== marked && b !== marked) || (focus && !(focus.pos.has(a) && focus.pos.has(b)))) continue;
    const p = at(g, a), q = at(g, b);
    ctx.moveTo(p.x, p.y); ctx.lineTo(q.x, q.y);
  }
  ctx.stroke();
}

function drawNodes(g) {
  const { ctx, focus } = g, marked = g.hovered || (focus && focus.centre);
  const near = marked ? g.around.get(marked) : null;
  for (const n of focus ? focus.pos.keys() : g.nodes) {
    const p = at(g, n);
    ctx.fillStyle = n.group.colour;
    ctx.globalAlpha = !focus && near && n !== marked && !near.has(n) ? 0.2 : 1;
    ctx.beginPath();
    ctx.arc(p.x, p.y, radius(n), 0, Math.PI * 2);
    ctx.fill();
    if (n === marked) { ctx.strokeStyle = "#1b1f24"; ctx.lineWidth = 2 / g.view.k; ctx.stroke(); }
  }
  ctx.globalAlpha = 1;
}

/** A node's text cut to `width` pixels at the label font. */
function fitted(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let cut = text;
  while (cut.length > 1 && ctx.measureText(cut + "…").width > width) cut = cut.slice(0, -1);
  return cut + "…";
}

/** The labels to try, most wanted first: the marked node, then (focused) its columns or the most connected. */
function candidates(g) {
  const marked = g.hovered || (g.focus && g.focus.centre);
  if (g.focus) return [marked, ...g.focus.pos.keys()].filter((n) => n && g.focus.pos.has(n));  // what is shown
  const top = g.ranked.slice(0, 400);
  return marked ? [marked, ...g.around.get(marked), ...top] : top;
}

/** A label's screen box beside its node: right of it, or left, or above (the neighbourhood's centre). */
function labelBox(text, w, sx, sy, r, side) {
  if (side === "left") return { x: sx - r - 3 - w, y: sy - 8, w, h: 16, text };
  if (side === "above") return { x: sx - w / 2, y: sy - r - 20, w, h: 16, text };
  return { x: sx + r + 3, y: sy - 8, w, h: 16, text };
}

/** Place labels in screen space, each only where it overlaps no other label and lies in the canvas. */
function placeLabels(g) {
  const { ctx, view, canvas, focus } = g, w = canvas.clientWidth, h = canvas.clientHeight;
  const limit = focus ? Infinity : OVERVIEW_LABELS + (g.hovered ? g.around.get(g.hovered).size + 1 : 0);
  const placed = [], seen = new Set();
  ctx.font = LABEL_FONT;
  for (const n of candidates(g)) {
    if (placed.length >= limit || seen.has(n)) continue;
    seen.add(n);
    const p = at(g, n), sx = view.x + p.x * view.k, sy = view.y + p.y * view.k;
    const text = fitted(ctx, String(n.name || n.id), focus ? focus.labelWidth : 220);
    const box = labelBox(text, ctx.measureText(text).width + 4, sx, sy, radius(n) * view.k, p.side);
    box.id = n.id;
    if (box.x < 0 || box.y < 0 || box.x + box.w > w || box.y + box.h > h) continue;
    if (placed.some((o) => box.x < o.x + o.w && o.x < box.x + box.w && box.y < o.y + o.h && o.y < box.y + box.h)) continue;
    placed.push(box);
  }
  return placed;
}

function drawLabels(g) {
  const { ctx } = g;
  g.placed = placeLabels(g);
  ctx.textBaseline = "middle";
  for (const box of g.placed) {
    ctx.fillStyle = "rgba(251, 252, 253, 0.9)";
    ctx.fillRect(box.x, box.y, box.w, box.h);
    ctx.fillStyle = "#1b1f24";
    ctx.fillText(box.text, box.x + 2, box.y + box.h / 2);
  }
  if (g.focus && g.focus.hidden) {
    ctx.fillStyle = "#4d5560";
    ctx.fillText(`${g.focus.hidden} more not shown (most connected first); the list names them all`, 8, g.canvas.clientHeight - 10);
  }
}

function draw(g) {
  const { canvas, ctx, view } = g;
  const ratio = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * ratio)) { canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio); }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.save();
  ctx.translate(view.x, view.y);
  ctx.scale(view.k, view.k);
  drawEdges(g);
  drawNodes(g);
  ctx.restore();
  drawLabels(g);
}

/** The node under a screen point (within its radius plus 6 pixels), or null. */
function nodeAt(g, clientX, clientY) {
  const { canvas, view } = g, rect = canvas.getBoundingClientRect();
  const x = (clientX - rect.left - view.x) / view.k, y = (clientY - rect.top - view.y) / view.k;
  let best = null, bestD = Infinity;
  for (const n of g.focus ? g.focus.pos.keys() : g.nodes) {
    const p = at(g, n), d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d < bestD) { best = n; bestD = d; }
  }
  return best && Math.sqrt(bestD) <= radius(best) + 6 / view.k ? best : null;
}

function zoom(g, factor, cx = g.canvas.clientWidth / 2, cy = g.canvas.clientHeight / 2) {
  const { view } = g;
  view.x = cx - (cx - view.x) * factor; view.y = cy - (cy - view.y) * factor; view.k *= factor;
  draw(g);
}

/** Drag to pan (a click without a drag picks a node), the pointer names what it is over, wheel or +/-
 * to zoom, arrows to pan, Escape back to the overview. */
function listen(g, onPick, onEscape) {
  const { canvas, view } = g;
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }; });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) {
      const over = nodeAt(g, e.clientX, e.clientY);
      if (over !== g.hovered) { g.hovered = over; draw(g); }
      return;
    }
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) drag.moved = true;
    view.x = drag.vx + e.clientX - drag.x; view.y = drag.vy + e.clientY - drag.y;
    if (g.frame >= g.iterations) draw(g);
  });
  canvas.addEventListener("pointerup", (e) => {
    const clicked = drag && !drag.moved;
    drag = null;
    const node = clicked ? nodeAt(g, e.clientX, e.clientY) : null;
    if (node && onPick) onPick(node);
  });
  canvas.addEventListener("pointerleave", () => { if (g.hovered) { g.hovered = null; draw(g); } });
  canvas.addEventListener("wheel", (e) => { e.preventDefault(); zoom(g, e.deltaY < 0 ? 1.2 : 1 / 1.2, e.offsetX, e.offsetY); }, { passive: false });
  canvas.addEventListener("keydown", (e) => {
    const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
    if (moves[e.key]) { view.x += moves[e.key][0]; view.y += moves[e.key][1]; }
    else if (e.key === "+" || e.key === "=") zoom(g, 1.2);
    else if (e.key === "-") zoom(g, 1 / 1.2);
    else if (e.key === "Escape" && g.focus && onEscape) onEscape();
    else return;
    e.preventDefault();
    draw(g);
  });
}

/** The controls the views use; `g` is the drawing's state. */
function controls(g) {
  return {
    /** Show one node's neighbourhood (1 or 2 hops); false if the id is unknown. */
    focus(id, hops = 1) {
      const n = g.index.get(id);
      if (!n) return false;
      g.focus = columns(g, n, hops);
      Object.assign(g.view, { x: 0, y: 0, k: 1 });
      draw(g);
      return true;
    },
    overview() { g.focus = null; fit(g); draw(g); },
    /** Name (and mark) a node as the pointer does: the keyboard's focus in the entity list. */
    hover(id) { g.hovered = g.index.get(id) || null; draw(g); },
    highlight(id) { this.hover(id); },
    /** The labels drawn last, as screen boxes relative to the canvas (tests check none overlap). */
    labels() { return g.placed.map(({ x, y, w, h, text, id }) => ({ x, y, w, h, text, id })); },
    /** The ids drawn in the neighbourhood view (empty in the overview). */
    shown() { return g.focus ? [...g.focus.pos.keys()].map((n) => n.id) : []; },
    groups() { return g.groups.map(({ name, count, colour }) => ({ name, count, colour })); },
    /** Screen position of a node (tests click it). */
    position(id) {
      const n = g.index.get(id), rect = g.canvas.getBoundingClientRect();
      if (!n || (g.focus && !g.focus.pos.has(n))) return null;
      const p = at(g, n);
      return { x: rect.left + g.view.x + p.x * g.view.k, y: rect.top + g.view.y + p.y * g.view.k };
    },
    stop() { g.alive = false; },
  };
}

export function drawGraph(canvas, snapshot, { onPick, onEscape } = {}) {
  const g = { canvas, ctx: canvas.getContext("2d"), view: { x: 0, y: 0, k: 1 }, ...graphOf(snapshot) };
  placeGroups(g);
  Object.assign(g, { hovered: null, focus: null, placed: [], alive: true, frame: 0, iterations: g.nodes.length > 800 ? 120 : 250 });
  g.ranked = [...g.nodes].sort((a, b) => b.degree - a.degree);

  // Layout steps for up to 24 ms per animation frame, refitting and redrawing after each batch (the
  // first frame draws the grouped start at once); the neighbourhood view keeps its columns.
  function tick() {
    if (!g.alive) return;
    const started = performance.now();
    while (g.frame < g.iterations && performance.now() - started < 24) step(g, 1 - g.frame++ / g.iterations);
    if (!g.focus) { fit(g); draw(g); }
    if (g.frame < g.iterations) requestAnimationFrame(tick);
    else canvas.dataset.settled = "true";
  }

  listen(g, onPick, onEscape);
  fit(g);
  draw(g);
  canvas.dataset.drawn = String(performance.now());
  requestAnimationFrame(() => requestAnimationFrame(tick));  // the grouped start is painted first
  return controls(g);
}
