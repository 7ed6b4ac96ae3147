// The graph drawn on a canvas: a force layout with grid-bucketed repulsion (linear in the nodes, so
// 2,000 nodes lay out in a few hundred milliseconds), pan by drag or arrows, zoom by wheel or +/-,
// click a node to pick it. Returns {highlight(id), stop()}.
const COLOURS = { memory: "#0b57d0", plan: "#7a4f00", entity: "#146c2e", topic: "#8e24aa" };

export function drawGraph(canvas, snapshot, { onPick } = {}) {
  const nodes = snapshot.nodes.map((n, i) => ({ ...n, i, x: Math.cos(i * 2.399) * Math.sqrt(i + 1) * 18, y: Math.sin(i * 2.399) * Math.sqrt(i + 1) * 18, vx: 0, vy: 0, degree: 0 }));
  const index = new Map(nodes.map((n) => [n.id, n]));
  const edges = [];
  for (const e of snapshot.edges) {
    const a = index.get(e.source), b = index.get(e.target);
    if (a && b && a !== b) { edges.push([a, b]); a.degree++; b.degree++; }
  }
  const ctx = canvas.getContext("2d");
  const view = { x: 0, y: 0, k: 1 };
  let highlighted = null, neighbours = new Set(), alive = true, frame = 0;

  const ITERATIONS = nodes.length > 800 ? 150 : 300;
  const cellKey = (gx, gy) => (gx + 32768) * 65536 + (gy + 32768);

  function step(alpha) {
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
          let ddx = n.x - m.x, ddy = n.y - m.y, d2 = ddx * ddx + ddy * ddy || 0.01;
          if (d2 > cell * cell) continue;
          const f = (900 / d2) * alpha;
          ddx *= f; ddy *= f;
          n.vx += ddx; n.vy += ddy; m.vx -= ddx; m.vy -= ddy;
        }
      }
    }
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

  function fit() {
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const n of nodes) { minX = Math.min(minX, n.x); minY = Math.min(minY, n.y); maxX = Math.max(maxX, n.x); maxY = Math.max(maxY, n.y); }
    const w = canvas.clientWidth, h = canvas.clientHeight;
    view.k = Math.min(2, 0.9 * Math.min(w / (maxX - minX || 1), h / (maxY - minY || 1)));
    view.x = w / 2 - view.k * (minX + maxX) / 2;
    view.y = h / 2 - view.k * (minY + maxY) / 2;
  }

  function draw() {
    const ratio = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
    if (canvas.width !== Math.round(w * ratio)) { canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio); }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.translate(view.x, view.y);
    ctx.scale(view.k, view.k);
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

  const radius = (n) => (n.kind === "memory" ? 6 : 3 + Math.min(6, Math.sqrt(n.degree)));

  function tick() {
    if (!alive) return;
    const started = performance.now();
    while (frame < ITERATIONS && performance.now() - started < 24) step(1 - frame++ / ITERATIONS);
    if (frame <= ITERATIONS) fit();
    draw();
    if (!canvas.dataset.drawn) canvas.dataset.drawn = String(performance.now());
    if (frame < ITERATIONS) requestAnimationFrame(tick);
    else canvas.dataset.settled = "true";
  }

  function at(clientX, clientY) {
    const rect = canvas.getBoundingClientRect();
    const x = (clientX - rect.left - view.x) / view.k, y = (clientY - rect.top - view.y) / view.k;
    let best = null, bestD = Infinity;
    for (const n of nodes) {
      const d = (n.x - x) ** 2 + (n.y - y) ** 2;
      if (d < bestD) { best = n; bestD = d; }
    }
    return best && Math.sqrt(bestD) <= radius(best) + 6 / view.k ? best : null;
  }

  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }; });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) drag.moved = true;
    view.x = drag.vx + e.clientX - drag.x; view.y = drag.vy + e.clientY - drag.y;
    if (frame >= ITERATIONS) draw();
  });
  canvas.addEventListener("pointerup", (e) => {
    const clicked = drag && !drag.moved;
    drag = null;
    if (!clicked) return;
    const node = at(e.clientX, e.clientY);
    if (node && onPick) onPick(node);
  });
  canvas.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.offsetX, e.offsetY); }, { passive: false });
  canvas.addEventListener("keydown", (e) => {
    const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
    if (moves[e.key]) { view.x += moves[e.key][0]; view.y += moves[e.key][1]; }
    else if (e.key === "+" || e.key === "=") zoom(1.2);
    else if (e.key === "-") zoom(1 / 1.2);
    else return;
    e.preventDefault();
    draw();
  });
  function zoom(factor, cx = canvas.clientWidth / 2, cy = canvas.clientHeight / 2) {
    view.x = cx - (cx - view.x) * factor; view.y = cy - (cy - view.y) * factor; view.k *= factor;
    draw();
  }

  requestAnimationFrame(tick);
  return {
    highlight(id) {
      highlighted = index.get(id) || null;
      neighbours = new Set();
      for (const [a, b] of edges) { if (a === highlighted) neighbours.add(b); if (b === highlighted) neighbours.add(a); }
      draw();
    },
    /** Screen position of a node (tests click it). */
    position(id) {
      const n = index.get(id), rect = canvas.getBoundingClientRect();
      return n ? { x: rect.left + view.x + n.x * view.k, y: rect.top + view.y + n.y * view.k } : null;
    },
    stop() { alive = false; },
  };
}
