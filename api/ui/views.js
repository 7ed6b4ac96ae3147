// The views: each renders into `main` and may return {stop()} to end its timers.
import { announce, confirmAction, download, el, failure, inline } from "./dom.js";
import { drawGraph, sortByName } from "./graph.js";
import { go } from "./nav.js";
import { api, timings } from "./session.js";

const STATUSES = ["Active", "DecisionRecord", "Superseded", "Proposed"];

function status(value) {
  return el("span", { class: `status status-${value}` }, value);
}

function memoryLink(topicId, text, scope) {
  const query = scope === "user" ? "?scope=user" : "";
  return el("a", { href: `#/memory/${encodeURIComponent(topicId)}${query}` }, text || topicId);
}

/** Which store holds a memory (docs/contract/21-user-scope.md); nothing from a server without scopes. */
function scopeMark(scope) {
  if (!scope) return null;
  const user = scope === "user";
  return el("span", { class: `chip scope ${scope}`, title: user ? "Your own memory: it follows you to every project" : "This project's memory" },
    user ? "yours" : "project");
}

function when(iso) {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
}

function afterPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

// -- Search ------------------------------------------------------------------------------------
async function search(main, args, params) {
  const query = params.get("q") || "";
  const input = el("input", { type: "search", id: "q", name: "q", value: query, placeholder: "What do you want to know?" });
  const superseded = el("input", { type: "checkbox", id: "superseded", checked: params.get("superseded") === "1" });
  const results = el("section", { "aria-label": "Results", id: "results" });
  main.append(
    el("h2", {}, "Search"),
    el("form", { class: "bar", role: "search", onsubmit: (event) => {
      event.preventDefault();
      go("search", [], { q: input.value, ...(superseded.checked ? { superseded: "1" } : {}) });
    } },
    el("label", { for: "q" }, "Query", input),
    el("label", { class: "inline", for: "superseded" }, superseded, "Include superseded"),
    el("button", { class: "primary", type: "submit" }, "Search")),
    results);
  if (!query) {
    results.append(el("p", { class: "muted" }, "Ask as an agent would: the answer shows each memory's lanes, score and how the graph reached it."));
    input.focus();
    return;
  }
  results.append(el("p", { class: "muted" }, "Searching…"));
  let reply;
  try {
    reply = await api("/api/agent/retrieve", { method: "POST", body: { query, maxResults: 10, includeSuperseded: superseded.checked } });
  } catch (error) {
    results.replaceChildren(failure(error));
    return;
  }
  const answered = reply.__answeredAt;
  const items = reply.entries.map((e) => el("article", { class: "card result", "data-topic": e.topicId },
    el("h3", {}, memoryLink(e.topicId, e.topic, e.scope)),
    el("div", { class: "meta" },
      scopeMark(e.scope), status(e.status),
      el("span", {}, `score ${e.score.toFixed(3)}`),
      el("span", { class: "lanes", "aria-label": "Lanes" }, e.lanes.map((l) => el("span", { class: "chip lane" }, l))),
      el("span", {}, `v${e.version}`),
      el("span", {}, when(e.updatedAt))),
    e.via ? el("p", { class: "via" }, el("strong", {}, "Via: "), inline(e.via)) : null,
    e.possiblySupersededBy ? el("p", { class: "via" }, "Possibly superseded by ", memoryLink(e.possiblySupersededBy)) : null,
    e.overriddenBy ? el("p", { class: "via" }, "Overridden in this project by ", memoryLink(e.overriddenBy)) : null,
    el("p", { class: "snippet" }, inline(e.context.length > 400 ? e.context.slice(0, 400) + "…" : e.context))));
  const head = reply.abstained || !reply.entries.length
    ? el("p", { class: "abstain", role: "status" }, el("strong", {}, "No memory returned. "), reply.abstainReason || "Nothing matched.")
    : el("p", { class: "muted", role: "status" }, `${reply.totalResults} memories, ${reply.tokensUsed} tokens`);
  results.replaceChildren(head, ...items);
  await afterPaint();
  timings.search = { serverMs: reply.__serverMs, drawMs: performance.now() - answered };
  results.dataset.query = query;
  results.dataset.drawMs = String(timings.search.drawMs);
}

// -- Memories ----------------------------------------------------------------------------------
async function memories(main, args, params) {
  const field = (name, label, type = "text") => el("label", { for: `f-${name}` }, label,
    el("input", { type, id: `f-${name}`, name, value: params.get(name) || "" }));
  const statusSelect = el("select", { id: "f-status", name: "status" },
    el("option", { value: "" }, "Any"), STATUSES.map((s) => el("option", { value: s, selected: params.get("status") === s }, s)));
  const scope = params.get("scope") || "all";
  const scopeSelect = el("select", { id: "f-scope", name: "scope" },
    [["all", "Both"], ["project", "This project"], ["user", "Yours (every project)"]].map(([value, label]) => el("option", { value, selected: scope === value }, label)));
  const form = el("form", { class: "bar", "aria-label": "Filters", onsubmit: (event) => {
    event.preventDefault();
    const values = {};
    for (const [k, v] of new FormData(form)) if (v) values[k] = v;
    go("memories", [], values);
  } },
  el("label", { for: "f-status" }, "Status", statusSelect), el("label", { for: "f-scope" }, "Scope", scopeSelect),
  field("topicIdPrefix", "Topic id starts with"), field("agentName", "Agent"), field("text", "Text"),
  field("createdAfter", "Created after", "date"), field("createdBefore", "Created before", "date"),
  el("button", { class: "primary", type: "submit" }, "Filter"));
  const list = el("section", { "aria-label": "Memories", id: "memory-list" });
  main.append(el("h2", {}, "Memories"), form, list);
  const cursors = (params.get("cursors") || "").split(",").filter(Boolean);
  const query = { limit: 50, scope };
  for (const k of ["status", "topicIdPrefix", "agentName", "text"]) if (params.get(k)) query[k] = params.get(k);
  for (const k of ["createdAfter", "createdBefore"]) if (params.get(k)) query[k] = `${params.get(k)}T00:00:00Z`;
  if (cursors.length) query.cursor = cursors[cursors.length - 1];
  let reply;
  try {
    reply = await api("/api/agent/memories", { query });
  } catch (error) {
    if (error.status === 405 || error.status === 404) {
      list.append(el("p", { class: "muted" }, "This server cannot list memories yet (listMemories); use Search or the Graph."));
      return;
    }
    list.append(failure(error));
    return;
  }
  const rows = reply.memories.map((m) => el("tr", {},
    el("td", { class: "wrap" }, memoryLink(m.topicId, m.topic, m.scope), el("div", { class: "muted" }, inline(m.preview))),
    el("td", {}, scopeMark(m.scope)), el("td", {}, status(m.status)), el("td", {}, `v${m.version}`), el("td", {}, m.agentName || ""),
    el("td", {}, when(m.updatedAt)), el("td", {}, m.graphState)));
  const page = (next) => {
    const copy = Object.fromEntries(params);
    copy.cursors = next.join(",");
    if (!copy.cursors) delete copy.cursors;
    go("memories", [], copy);
  };
  list.append(
    el("table", { class: "list" },
      el("caption", { class: "visually-hidden" }, "Memories, newest first"),
      el("thead", {}, el("tr", {}, ["Memory", "Scope", "Status", "Version", "Agent", "Updated", "Graph"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)),
    el("div", { class: "pager" },
      el("button", { type: "button", disabled: !cursors.length, onclick: () => page(cursors.slice(0, -1)) }, "Previous page"),
      el("span", { class: "muted" }, `page ${cursors.length + 1} · ${reply.count} shown`),
      el("button", { type: "button", disabled: !reply.nextCursor, onclick: () => page([...cursors, reply.nextCursor]) }, "Next page")));
  await afterPaint();
  if (timings.memoriesPaint === undefined) timings.memoriesPaint = performance.now();
}

// -- A memory ----------------------------------------------------------------------------------
const FIELDS = ["topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references", "status"];

function wordDiff(before, after) {
  const a = before.split(/(\s+)/), b = after.split(/(\s+)/);
  const whole = [el("del", {}, before), " ", el("ins", {}, after)];
  if (a.length * b.length > 400000) return whole;
  const dp = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--)
    dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  if (dp[0][0] * 2 < Math.max(a.length, b.length)) return whole;  // mostly rewritten: old, then new
  const out = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { out.push(a[i]); i++; j++; }
    else if (j < b.length && (i >= a.length || dp[i][j + 1] >= dp[i + 1][j])) out.push(el("ins", {}, b[j++]));
    else out.push(el("del", {}, a[i++]));
  }
  return out;
}

function changes(older, newer) {
  const list = el("ul", { class: "plain diff" });
  for (const f of FIELDS) {
    const before = older[f], after = newer[f];
    if (Array.isArray(after)) {
      const added = after.filter((x) => !before.includes(x)), removed = before.filter((x) => !after.includes(x));
      for (const x of removed) list.append(el("li", {}, `${f}: `, el("del", {}, x)));
      for (const x of added) list.append(el("li", {}, `${f}: `, el("ins", {}, x)));
    } else if (before !== after) {
      list.append(el("li", {}, `${f}: `, wordDiff(String(before), String(after))));
    }
  }
  return list.children.length ? list : el("p", { class: "muted" }, "No change in its fields.");
}

async function memory(main, args, params) {
  const topicId = args[0];
  const scope = params && params.get("scope") === "user" ? "user" : undefined;  // the user store's, else the project's
  main.append(el("h2", {}, topicId), el("p", { class: "muted" }, "Loading…"));
  let detail, context, implied, neighbourhood;
  try {
    [detail, context, implied, neighbourhood] = await Promise.all([
      // The topicId as a query parameter: a path segment cannot carry `/` or `..`.
      api("/api/agent/memory", { query: { topicId, scope } }),
      // The project's graph and supersessions hold none of the user store's memories.
      scope ? null : api("/api/agent/memory/context", { query: { topicId } }).catch(() => null),
      scope ? { pairs: [] } : api("/api/agent/supersessions").catch(() => ({ pairs: [] })),
      scope ? null : api("/api/graph", { query: { topicId, hops: 1 } }).catch(() => null),
    ]);
  } catch (error) {
    main.replaceChildren(el("h2", {}, topicId), failure(error));
    return;
  }
  const versions = detail.versions;
  const latest = versions[versions.length - 1];
  const left = el("div", {}), right = el("div", {});
  main.replaceChildren(el("h2", {}, latest.topic), el("div", { class: "meta" },
    el("span", {}, `topic id ${topicId}`), scopeMark(detail.scope), status(latest.status), el("span", {}, `v${latest.version}`),
    latest.agentName ? el("span", {}, `by ${latest.agentName}`) : null, el("span", {}, `graph ${latest.graphState}`)),
  actions(topicId, detail, context, scope), el("div", { class: "cols" }, left, right));

  // Versions, newest first, each with what changed from the one before.
  left.append(el("h3", {}, `Versions (${versions.length})`));
  for (let i = versions.length - 1; i >= 0; i--) {
    const v = versions[i];
    left.append(el("article", { class: "card version", "data-version": v.version },
      el("h3", {}, `Version ${v.version} `, status(v.status)),
      el("div", { class: "meta" }, el("span", {}, `created ${when(v.createdAt)}`), v.sessionId ? el("span", {}, `session ${v.sessionId}`) : null),
      el("p", { class: "snippet" }, inline(v.context)),
      v.decisions.length ? el("ul", {}, v.decisions.map((d) => el("li", {}, inline(d)))) : null,
      i > 0 ? el("details", {}, el("summary", {}, `Changes from version ${versions[i - 1].version}`), changes(versions[i - 1], v)) : null));
  }

  // The supersession chain: the topic's versions, confirmed links, and implied ones to confirm.
  const chain = el("section", { "aria-label": "Supersession chain", id: "chain" }, el("h3", {}, "Supersession chain"));
  chain.append(el("div", { class: "chain" }, versions.map((v, i) => [i ? el("span", { "aria-hidden": "true" }, "→") : null,
    el("span", { class: "chip" }, `v${v.version} ${v.status}`)])));
  if (latest.status === "Superseded") chain.append(el("p", { class: "muted" }, "The newest version is Superseded (confirmed): search hides it unless asked for."));
  for (const pair of implied.pairs.filter((p) => p.older.topicId === topicId || p.newer.topicId === topicId)) {
    const older = pair.older.topicId === topicId;
    const button = el("button", { type: "button", onclick: async () => {
      if (!(await confirmAction("Confirm supersession", `Mark "${pair.older.topic}" as superseded by "${pair.newer.topic}"? It is then hidden from search unless asked for.`))) return;
      try {
        await api("/api/agent/supersessions/confirm", { method: "POST", body: { olderTopicId: pair.older.topicId, newerTopicId: pair.newer.topicId } });
        announce("Supersession confirmed");
        go("memory", [topicId]);
      } catch (error) { chain.append(failure(error)); }
    } }, "Confirm");
    chain.append(el("div", { class: "card implied" },
      el("p", {}, older ? "Implied: seems superseded by " : "Implied: seems to supersede ", memoryLink(older ? pair.newer.topicId : pair.older.topicId, older ? pair.newer.topic : pair.older.topic)),
      el("p", { class: "muted" }, inline(`"${pair.replaced}" → "${pair.replacement}": ${pair.evidence}`)), button));
  }
  right.append(chain, reconciled(topicId, detail.reconcile || []));

  // Entities, related memories and the graph neighbourhood.
  const entities = (detail.entities || (context && context.entities) || []);
  right.append(el("h3", {}, `Entities (${entities.length})`),
    el("ul", { class: "plain", id: "entities" }, entities.map((e) => el("li", {}, el("a", { href: `#/graph?entity=${encodeURIComponent(e.name)}` }, e.name), el("span", { class: "muted" }, ` ${e.type} · ${e.memories} memories`)))));
  if (context && context.relatedMemories.length) {
    right.append(el("h3", {}, "Related memories"), el("ul", { class: "plain" }, context.relatedMemories.map((r) =>
      el("li", {}, memoryLink(r.topicId, r.topic), el("span", { class: "muted" }, ` via ${r.via.join(", ")}`)))));
  }
  if (detail.provenance) {
    const p = detail.provenance;
    right.append(el("h3", {}, "Provenance"), el("p", { class: "muted" }, `staged ${when(p.stagedAt)}${p.sessionId ? ` in session ${p.sessionId}` : ""}${p.operationId ? `, operation ${p.operationId}` : ""}`));
  }
  if (neighbourhood && neighbourhood.nodes.length) {
    const canvas = el("canvas", { class: "graph small", tabindex: "0", role: "img", "aria-label": `Graph neighbourhood of ${topicId}: ${neighbourhood.nodes.length} nodes` });
    left.append(el("h3", {}, "Graph neighbourhood"), canvas);
    const drawing = drawGraph(canvas, neighbourhood, { onPick: (node) => pickNode(node) });
    const own = neighbourhood.nodes.filter((n) => n.kind === "memory" && n.topic_id === topicId).sort((a, b) => b.version - a.version)[0];
    if (own) drawing.focus(own.id, 1);  // its entities and memories in columns, every label readable
    return drawing;
  }
  return null;
}

// Reconcile decisions on writes and a person's supersessions (INGEST_CONTRACT.md 7.1), each with its
// evidence and, until undone, a Restore button that gives the superseded memories their status back.
function reconciled(topicId, entries) {
  const box = el("section", { "aria-label": "Reconcile decisions", id: "reconcile" }, el("h3", {}, `Reconcile decisions (${entries.length})`));
  if (!entries.length) box.append(el("p", { class: "muted" }, "No decision concerns this memory."));
  for (const entry of entries.slice().reverse()) {
    const ev = entry.evidence || {};
    const others = entry.superseded.filter((r) => r.topicId !== entry.newer.topicId);
    const mine = entry.newer.topicId === topicId;
    const what = entry.decidedBy === "manual" ? (mine ? "marked as superseding others (manual) " : "marked superseded (manual) ") : `${entry.decision} (${entry.decidedBy}) `;
    const card = el("div", { class: "card reconcile", "data-decision": entry.decision, "data-decided-by": entry.decidedBy },
      el("p", {}, what, mine ? `made by this memory, ${when(entry.at)}` : "by ",
        mine ? null : memoryLink(entry.newer.topicId, entry.newer.topicId), mine ? null : `, ${when(entry.at)}`),
      el("p", { class: "muted" }, `${entry.reason}${ev.cosine !== undefined ? ` · cosine ${ev.cosine}` : ""}${ev.retired ? ` · retires "${ev.retired}"` : ""}${ev.cue ? ` · "${ev.cue}"` : ""}`),
      others.length ? el("p", {}, "Superseded: ", others.map((r) => memoryLink(r.topicId, r.topicId))) : null);
    if (entry.restoredAt) card.append(el("p", { class: "muted" }, `Undone ${when(entry.restoredAt)}`));
    else if (entry.superseded.length) {
      const target = entry.superseded.some((r) => r.topicId === topicId) ? topicId : entry.superseded[0].topicId;
      card.append(el("button", { type: "button", class: "restore", onclick: async () => {
        try {
          await api("/api/agent/memories/restore", { method: "POST", body: { topicId: target } });
          announce(`Restored ${target}`);
          go("memory", [topicId]);
        } catch (error) { card.append(failure(error)); }
      } }, "Restore"));
    }
    box.append(card);
  }
  return box;
}

function pickNode(node) {
  if (node.kind === "memory" && node.topic_id) go("memory", [node.topic_id]);
  else go("graph", [], { entity: node.name });
}

function actions(topicId, detail, context, scope) {
  const bar = el("div", { class: "row", role: "group", "aria-label": "Actions" });
  bar.append(el("button", { type: "button", onclick: () => download(`${topicId}.json`, { memory: detail, context }) }, "Export JSON"));
  bar.append(el("button", { type: "button", class: "danger", id: "forget", onclick: async () => {
    let preview;
    try {
      preview = await api("/api/agent/memories/forget", { method: "POST", body: { topicId, dryRun: true, scope } });
    } catch (error) {
      bar.append(error.status === 405 ? el("p", { class: "muted" }, "This server cannot forget memories yet (forgetMemory).") : failure(error));
      return;
    }
    const ok = await confirmAction("Forget this memory", `Forget "${topicId}": ${preview.versions} version(s) are deleted from every store. This cannot be undone.`, "Forget");
    if (!ok) return;
    try {
      await api("/api/agent/memories/forget", { method: "POST", body: { topicId, scope } });
      announce(`Forgot ${topicId}`);
      go("memories");
    } catch (error) { bar.append(failure(error)); }
  } }, "Forget…"));
  bar.append(el("button", { type: "button", id: "edit", onclick: () => toggle(bar, editForm(topicId, detail.latest, scope)) }, "Edit…"));
  bar.append(el("button", { type: "button", id: "supersede", onclick: () => toggle(bar, supersedeForm(topicId)) }, "Superseded by…"));
  return bar;
}

// A person's corrections (issue 50): a new version of this memory, or "this one is superseded by that one".
const EDIT_LISTS = [["decisions", "Decisions"], ["rationale", "Rationale"], ["openQuestions", "Open questions"], ["nextSteps", "Next steps"], ["references", "References"]];

function toggle(bar, form) {
  const open = bar.parentNode.querySelector("form.correction");
  if (open) open.remove();
  if (!open || open.id !== form.id) bar.after(form);
}

function field(id, label, control) {
  return el("p", {}, el("label", { for: id }, label), el("br"), control);
}

function editForm(topicId, latest, scope) {
  const form = el("form", { class: "correction card", id: "edit-form", "aria-label": "Edit this memory" });
  const topic = el("input", { id: "edit-topic", value: latest.topic, required: true, size: 60 });
  const context = el("textarea", { id: "edit-context", rows: 4, cols: 60, required: true });
  context.value = latest.context;
  const lists = EDIT_LISTS.map(([name, label]) => {
    const area = el("textarea", { id: `edit-${name}`, rows: 3, cols: 60 });
    area.value = latest[name].join("\n");
    return [name, label, area];
  });
  const status = el("select", { id: "edit-status" }, ["Active", "DecisionRecord"].map((s) => el("option", { value: s, selected: s === latest.status }, s)));
  form.append(el("h3", {}, "Edit: stores a new version"), field("edit-topic", "Topic", topic), field("edit-context", "Context", context),
    ...lists.map(([name, label, area]) => field(`edit-${name}`, `${label} (one per line)`, area)), field("edit-status", "Status", status),
    el("button", { type: "submit", id: "edit-save" }, "Save as a new version"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { topic: topic.value, context: context.value, agentName: "person", scope,
      metadata: { topicId, createdAt: latest.createdAt, updatedAt: new Date().toISOString(), status: status.value, planId: latest.planId } };
    for (const [name, , area] of lists) body[name] = area.value.split("\n").map((x) => x.trim()).filter(Boolean);
    try {
      await api("/api/agent/ingest", { method: "POST", body });
      announce(`Stored a new version of ${topicId}`);
      go("memory", [topicId], scope ? { scope } : {});
    } catch (error) { form.append(failure(error)); }
  });
  return form;
}

function supersedeForm(topicId) {
  const form = el("form", { class: "correction card", id: "supersede-form", "aria-label": "Mark this memory superseded" });
  const newer = el("input", { id: "supersede-newer", required: true, size: 40 });
  form.append(field("supersede-newer", "Superseded by (the newer memory's topic id)", newer),
    el("button", { type: "submit", id: "supersede-save" }, "Mark superseded"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const by = newer.value.trim();
    if (!(await confirmAction("Mark superseded", `Mark "${topicId}" as superseded by "${by}"? It is then hidden from search and the briefing unless asked for.`))) return;
    try {
      await api("/api/agent/supersessions/confirm", { method: "POST", body: { olderTopicId: topicId, newerTopicId: by, listed: false } });
      announce(`${topicId} is superseded by ${by}`);
      go("memory", [topicId]);
    } catch (error) { form.append(failure(error)); }
  });
  return form;
}

// -- Graph -------------------------------------------------------------------------------------
/** The side panel of a chosen node: what it is, its memories (or, for a memory, a link to it), its entities. */
function nodeDetail(node, linked) {
  const mems = linked.filter((n) => n.kind === "memory");
  const kind = node.kind === "entity" ? node.entity_type || "entity" : node.kind;
  return [el("h3", {}, node.name),
    el("p", { class: "muted" }, kind, node.description ? [" · ", inline(node.description)] : null),
    node.kind === "memory" && node.topic_id ? el("p", {}, memoryLink(node.topic_id, `Open this memory (v${node.version})`)) : null,
    el("h3", {}, `Memories (${mems.length})`),
    el("ul", { class: "plain", id: "entity-memories" }, mems.map((m) => el("li", {}, memoryLink(m.topic_id, `${m.name} v${m.version}`), " ", status(m.status)))),
    el("p", { class: "muted" }, `Linked entities: ${linked.filter((n) => n.kind === "entity").map((n) => n.name).slice(0, 20).join(", ") || "none"}`)].filter(Boolean);
}

/** The legend: each group's colour, name and size (the overview groups and colours by type). */
function legend(groups) {
  const swatch = (colour) => {  // set through the CSSOM: the page's CSP allows no style attribute
    const dot = el("span", { class: "swatch", "aria-hidden": "true" });
    dot.style.background = colour;
    return dot;
  };
  return el("ul", { class: "plain legend", id: "graph-legend", "aria-label": "Node types" },
    groups.map((g) => el("li", {}, swatch(g.colour), `${g.name} (${g.count})`)));
}

function neighboursOf(snapshot) {
  const neighbours = new Map();
  for (const e of snapshot.edges) {
    if (!neighbours.has(e.source)) neighbours.set(e.source, []);
    if (!neighbours.has(e.target)) neighbours.set(e.target, []);
    neighbours.get(e.source).push(e.target);
    neighbours.get(e.target).push(e.source);
  }
  return neighbours;
}

async function graph(main, args, params) {
  const started = performance.now();
  main.append(el("h2", {}, "Graph"), el("p", { class: "muted" }, "Loading the graph…"));
  let snapshot;
  try { snapshot = await api("/api/graph"); } catch (error) { main.replaceChildren(el("h2", {}, "Graph"), failure(error)); return; }
  const fetched = performance.now(), nodes = snapshot.nodes;
  const entities = sortByName(nodes.filter((n) => n.kind === "entity"));
  const canvas = el("canvas", { class: "graph", tabindex: "0", role: "img", id: "graph-canvas",
    "aria-label": `Entity graph: ${nodes.length} nodes, ${snapshot.edges.length} edges, grouped by type. Arrow keys pan, plus and minus zoom, Escape returns to the overview; pick entities from the list.` });
  const filter = el("input", { type: "search", id: "entity-filter", placeholder: "Find an entity, Enter to focus it" });
  const hops = el("select", { id: "graph-hops" }, el("option", { value: "1" }, "1 hop"), el("option", { value: "2" }, "2 hops"));
  const list = el("ul", { class: "plain entity-list", id: "entity-list" });
  const detail = el("section", { "aria-label": "Selected entity", id: "entity-detail", "aria-live": "polite" });
  const back = el("button", { type: "button", id: "graph-overview", hidden: true }, "Back to the overview");
  const side = el("div", { class: "side" }, detail, el("label", { for: "entity-filter" }, "Entities", filter), list);
  const legendSlot = el("div", {});
  main.replaceChildren(el("h2", {}, "Graph"),
    el("p", { class: "muted" }, `${entities.length} entities, ${nodes.length - entities.length} memories and plans, ${snapshot.edges.length} edges. Labels name the most connected; choose a node to see its neighbourhood.`),
    el("div", { class: "row" }, back, el("label", { class: "inline", for: "graph-hops" }, "Neighbourhood", hops)), legendSlot,
    el("div", { class: "graph-wrap" }, canvas, side));
  const neighbours = neighboursOf(snapshot), byId = new Map(nodes.map((n) => [n.id, n]));
  let chosen = null;
  const select = (node) => {
    chosen = node;
    for (const b of list.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b.dataset.id === node.id));
    drawing.focus(node.id, Number(hops.value));
    back.hidden = false;
    const linked = (neighbours.get(node.id) || []).map((id) => byId.get(id)).filter(Boolean);
    detail.replaceChildren(...nodeDetail(node, linked));
    announce(`${node.name}: neighbourhood shown`);
  };
  const overview = () => { chosen = null; back.hidden = true; drawing.overview(); };
  back.addEventListener("click", overview);
  hops.addEventListener("change", () => { if (chosen) select(chosen); });
  const matches = () => {
    const q = filter.value.trim().toLowerCase();
    return entities.filter((n) => !q || n.name.toLowerCase().includes(q));
  };
  const fill = () => list.replaceChildren(...matches().slice(0, 300).map((n) => el("li", {}, el("button", { type: "button", "data-id": n.id, "aria-pressed": "false",
    onclick: () => select(n), onfocus: () => drawing.hover(n.id), onmouseenter: () => drawing.hover(n.id) }, n.name))));
  filter.addEventListener("input", fill);
  filter.addEventListener("keydown", (event) => {  // search to focus: Enter shows the best match's neighbourhood
    if (event.key !== "Enter") return;
    event.preventDefault();
    const q = filter.value.trim().toLowerCase(), found = matches();
    const best = found.find((n) => n.name.toLowerCase() === q) || found[0];
    if (best) select(best);
  });
  fill();
  const drawing = drawGraph(canvas, snapshot, { onPick: select, onEscape: overview });
  legendSlot.replaceChildren(legend(drawing.groups()));
  window.__flowbabyGraph = drawing;
  const wanted = params.get("entity");
  const node = wanted ? entities.find((n) => n.name === wanted) : null;
  if (node) select(node);
  await afterPaint();
  timings.graph = { nodes: nodes.length, fetchMs: fetched - started, drawMs: performance.now() - started };
  canvas.dataset.drawMs = String(timings.graph.drawMs);
  canvas.dataset.drawnAt = String(performance.now());  // since the page's navigation began
  return drawing;
}

// -- Sessions ----------------------------------------------------------------------------------
async function sessions(main, args, params) {
  const query = params.get("q") || "";
  const input = el("input", { type: "search", id: "session-q", value: query });
  const out = el("section", { id: "session-results", "aria-label": "Session search results" });
  const listing = el("section", { "aria-label": "Sessions", id: "session-list" });
  main.append(el("h2", {}, "Sessions"),
    el("form", { class: "bar", role: "search", onsubmit: (event) => { event.preventDefault(); go("sessions", [], { q: input.value }); } },
      el("label", { for: "session-q" }, "Search the agents' sessions", input), el("button", { class: "primary", type: "submit" }, "Search")),
    out, listing);
  api("/api/agent/sessions").then((reply) => {
    listing.append(el("h3", {}, `Sessions of this workspace (${reply.count})`),
      reply.count ? el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["Title", "Source", "Messages", "Updated", "Index"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, reply.sessions.map((s) => el("tr", {}, el("td", { class: "wrap" }, s.title || s.session_id), el("td", {}, s.source),
          el("td", {}, String(s.message_count)), el("td", {}, String(s.updated_at || "")), el("td", {}, s.index_status?.status || ""))))) : el("p", { class: "muted" }, "No agent session found for this workspace."),
      ...(reply.problems || []).map((p) => el("p", { class: "muted" }, p)));
  }).catch((error) => listing.append(failure(error)));
  if (!query) return;
  let reply;
  try { reply = await api("/api/agent/sessions/search", { query: { q: query, limit: 10 } }); } catch (error) { out.append(failure(error)); return; }
  out.append(el("p", { role: "status", class: "muted" }, `${reply.count} hits in ${reply.sessions_searched} sessions`));
  for (const hit of reply.results) {
    const turns = el("div", {});
    const card = el("article", { class: "card session-hit" },
      el("div", { class: "meta" }, el("span", {}, hit.source), el("span", {}, `session ${hit.session_id}`), el("span", {}, `distance ${hit.distance.toFixed(3)}`)),
      el("p", { class: "snippet" }, inline(hit.chunk_text.length > 500 ? hit.chunk_text.slice(0, 500) + "…" : hit.chunk_text)),
      el("button", { type: "button", onclick: async (event) => {
        event.target.disabled = true;
        try {
          const ctx = await api(`/api/agent/sessions/${encodeURIComponent(hit.session_id)}/context`, { query: { q: query, context_turns: 2, limit: 1, source: hit.source } });
          const found = ctx.results.find((r) => r.turn_source_id === hit.turn_source_id) || ctx.results[0];
          turns.replaceChildren(...(found ? found.turns : []).map((t) => el("div", { class: `turn${t.is_hit ? " hit" : ""}` },
            el("strong", {}, `${t.role} `), el("span", { class: "muted" }, when(t.created_at)), el("div", {}, inline(t.text)))));
        } catch (error) { turns.replaceChildren(failure(error)); }
      } }, "Show context turns"), turns);
    out.append(card);
  }
}

// -- Activity ----------------------------------------------------------------------------------
async function activity(main) {
  const index = el("section", { id: "index-status", "aria-label": "Index status" });
  const ops = el("section", { id: "operations", "aria-label": "Background operations" });
  const feed = el("ol", { class: "plain feed", id: "audit-feed" });
  const live = el("p", { class: "muted", role: "status" });
  main.append(el("h2", {}, "Activity"), el("div", { class: "cols" },
    el("section", { "aria-label": "Audit log" }, el("h3", {}, "Audit log (live)"), live, feed), el("div", {}, index, ops)));
  let seen = null;
  const refresh = async () => {
    try {
      const [audit, health, background] = await Promise.all([api("/api/agent/audit", { query: { limit: 100 } }), api("/api/agent/index/status"), api("/api/agent/background")]);
      const newest = audit.entries[0] ? audit.entries[0].timestamp : null;
      if (newest !== seen) {
        const fresh = seen === null ? 0 : audit.entries.findIndex((e) => e.timestamp === seen);
        seen = newest;
        feed.replaceChildren(...audit.entries.map((e) => el("li", {},
          el("span", { class: "muted" }, when(e.timestamp)), " ", el("strong", {}, e.command), " ",
          e.user || e.agentName ? `by ${e.user || e.agentName} ` : "", e.topicDigest ? el("span", { class: "chip" }, `topic #${e.topicDigest}`) : null, " ",
          el("span", { class: e.result === "success" ? "" : "error" }, e.errorCode || e.result), el("span", { class: "muted" }, ` ${Math.round(e.durationMs)} ms`))));
        live.textContent = fresh > 0 ? `${fresh} new entries` : `${audit.count} newest entries`;
      }
      index.replaceChildren(el("h3", {}, "Index"), el("p", {}, el("strong", {}, health.status), ` ${health.message}`),
        el("p", { class: "muted" }, `${health.counts.memories} memories, ${health.counts.vectors} vectors, ${health.counts.graphIndexed} in the graph, ${health.counts.impliedSupersessions} implied supersessions`),
        el("button", { type: "button", id: "repair", onclick: async () => {
          if (!(await confirmAction("Repair the index", "Rebuild missing vectors and graph entries now?", "Repair"))) return;
          try { const r = await api("/api/agent/index/repair", { method: "POST", body: {} }); announce(r.message || "Repair started"); } catch (error) { index.append(failure(error)); }
        } }, "Repair index"));
      ops.replaceChildren(el("h3", {}, "Background operations"), el("ul", { class: "plain" }, background.operations.slice(0, 15).map((o) =>
        el("li", {}, el("strong", {}, o.status), ` ${o.topicIds.join(", ")} `, el("span", { class: "muted" }, when(o.finishedAt || o.startedAt || o.createdAt))))));
    } catch (error) {
      live.textContent = error.message;
    }
  };
  await refresh();
  const timer = setInterval(refresh, 3000);
  return { stop: () => clearInterval(timer) };
}

export const views = { search, memories, memory, graph, sessions, activity };
