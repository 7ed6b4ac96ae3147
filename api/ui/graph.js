// The graph drawn on a canvas. The overview shows structure: nodes grouped by type (each type a disc of
// its own colour, laid out once and drawn as is: no simulation), entities sized by how many memories
// mention them, and labels only where they fit: the pointer's or keyboard's node first, then the most
// connected. focus(id) shows one node's neighbourhood (one or two hops) in columns, so every label shown
// is readable. Labels are placed in screen space and never overlap (a label that would is left out);
// labels() reports their boxes. drawGraph returns {highlight, focus, overview, hover, labels, shown,
// groups, position}.
const PALETTE = ["#146c2e", "#b3261e", "#8e24aa", "#00696d", "#a8326e", "#5f6368", "#3949ab", "#8d6e00", "#6d4c41", "#c2410c", "#0e7490"];
const FIXED = { memory: "#0b57d0", plan: "#7a4f00" };
const LABEL_FONT = "12px system-ui, sans-serif";
const OVERVIEW_LABELS = 30;
const ROW = 18;  // pixels between rows of the neighbourhood view: more than a label's height
const collator = new Intl.Collator();  // one, not one per localeCompare: thousands of names are sorted
const byName = (a, b) => collator.compare(String(a.name), String(b.name));
const groupOf = (n) => (n.kind === "entity" ? n.entity_type || "entity" : n.kind || "node");
const radius = (n) => (n.kind === "memory" ? 5 : 3 + Math.min(9, 2 * Math.sqrt(n.mentions)));

/** Nodes, edges (two distinct known nodes), neighbours and degrees; groups largest first. */
function graphOf(snapshot) {
  const nodes = snapshot.nodes.map((n) => ({ ...n, x: 0, y: 0, degree: 0 }));
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
  const names = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || collator.compare(a, b));
  let free = 0;
  const groups = names.map((name) => ({ name, count: counts.get(name), colour: FIXED[name] || PALETTE[free++ % PALETTE.length] }));
  return { nodes, index, edges, around, groups };
}

const GAP = 48;  // world units between two groups' discs

/** A group's nodes on a sunflower disc around its centre, most mentioned first (in the middle): each
 * node takes a cell sized to its circle, so no two overlap; returns the disc's radius. */
function disc(members) {
  members.sort((a, b) => b.mentions - a.mentions || b.degree - a.degree || byName(a, b));
  let area = 0, outer = 0;
  members.forEach((n, k) => {
    const cell = 2 * radius(n) + 6, r = Math.sqrt(area / Math.PI) + (k ? cell / 2 : 0);
    area += cell * cell;
    Object.assign(n, { dx: Math.cos(k * 2.39996) * r, dy: Math.sin(k * 2.39996) * r });
    outer = Math.max(outer, r + cell / 2);
  });
  return outer;
}

/** The layout, computed once and drawn as is (no simulation): each type a disc, the largest in the
 * middle and the others on a ring around it, each given an arc as wide as its disc. */
function placeGroups({ nodes, groups }) {
  const named = new Map(groups.map((group) => [group.name, Object.assign(group, { members: [] })]));
  for (const n of nodes) { n.group = named.get(groupOf(n)); n.group.members.push(n); }
  for (const group of groups) group.r = disc(group.members);
  const [middle, ...around] = groups, widths = around.map((group) => 2 * group.r + GAP);
  const total = widths.reduce((a, b) => a + b, 0), half = widths.map((w) => (w / total) * Math.PI);
  // Far enough out that each disc clears the middle one and, along the chord, its neighbour on the ring.
  let ring = middle.r + GAP + Math.max(0, ...around.map((group) => group.r));
  if (around.length > 1) {
    around.forEach((_, i) => {
      const j = (i + 1) % around.length;
      ring = Math.max(ring, (widths[i] + widths[j]) / (4 * Math.sin((half[i] + half[j]) / 2)));
    });
  }
  Object.assign(middle, { cx: 0, cy: 0 });
  let angle = -Math.PI / 2;
  around.forEach((group, i) => {
    angle += half[i];
    Object.assign(group, { cx: Math.cos(angle) * ring, cy: Math.sin(angle) * ring });
    angle += half[i];
  });
  for (const n of nodes) { n.x = n.group.cx + n.dx; n.y = n.group.cy + n.dy; }
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
    list.sort((a, b) => b.degree - a.degree || byName(a, b));
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
    draw(g);
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
  };
}

/** Entities (or any nodes) in name order, as the lists show them. */
export const sortByName = (nodes) => nodes.sort(byName);

export function drawGraph(canvas, snapshot, { onPick, onEscape } = {}) {
  const g = { canvas, ctx: canvas.getContext("2d"), view: { x: 0, y: 0, k: 1 }, ...graphOf(snapshot) };
  placeGroups(g);
  Object.assign(g, { hovered: null, focus: null, placed: [] });
  g.ranked = [...g.nodes].sort((a, b) => b.degree - a.degree);
  listen(g, onPick, onEscape);
  fit(g);
  draw(g);
  canvas.dataset.drawn = String(performance.now());
  return controls(g);
}
