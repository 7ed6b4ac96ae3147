// Drives the memory browser in headless Debian chromium (playwright-core, no browser download) for
// tests/e2e/test_memory_browser.py: signs in through the one-time link, walks every view, runs
// axe-core on each, takes the docs/ screenshots and records every request the page makes.
// Env: CONFIG (a JSON file written by the test), OUT (what this script saw, JSON).
const { config, drive, loopbackOnly, axe, shot } = require("./common");

const seen = { requests: [], blocked: [], axe: {}, views: {}, timings: {}, console: [], steps: [] };

async function main(context, browser) {
  await loopbackOnly(context, seen);
  if (config.listOnly) return await listPaint(context);
  const page = await context.newPage();
  page.on("console", (m) => { if (m.type() === "error") seen.console.push(m.text().slice(0, 300)); });
  page.on("pageerror", (e) => seen.console.push(`pageerror: ${String(e).slice(0, 300)}`));

  // Sign in through the one-time link; the link is then used up.
  await page.goto(config.link);
  await page.waitForSelector("#q", { timeout: 20000 });
  seen.cookies = (await context.cookies()).map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite }));
  seen.steps.push("signed in");
  const again = await browser.newPage();
  await again.goto(config.link);
  await again.waitForSelector("#signin-token", { timeout: 10000 });
  seen.linkReused = await again.locator("main").innerText();
  await again.close();

  // Keyboard: from the top, the first Tab reaches the skip link, then the views' links.
  await page.goto(`${config.base}/#/activity`);
  await page.reload();
  await page.waitForSelector("#audit-feed li");
  await page.keyboard.press("Tab");
  seen.firstTab = await page.evaluate(() => document.activeElement.textContent);
  await page.keyboard.press("Tab");
  seen.secondTab = await page.evaluate(() => document.activeElement.textContent);
  seen.focusOutline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);

  // Search, as an agent would.
  await page.goto(`${config.base}/#/search`);
  await page.waitForSelector("#q");
  for (const query of config.queries) {
    await page.fill("#q", query);
    await page.press("#q", "Enter");
    await page.waitForFunction((q) => {
      const r = document.querySelector("#results");
      return r && r.dataset.query === q && r.dataset.drawMs;
    }, query, { timeout: 30000 });
    seen.views[`search:${query}`] = {
      entries: await page.$$eval(".result", (cards) => cards.map((c) => ({
        topicId: c.dataset.topic,
        lanes: [...c.querySelectorAll(".lane")].map((l) => l.textContent),
        via: c.querySelector(".via") ? c.querySelector(".via").textContent : null,
        viaCode: [...c.querySelectorAll(".via code")].map((x) => x.textContent),
        status: c.querySelector(".status").textContent,
        score: c.querySelector(".meta").textContent,
      }))),
      abstain: await page.locator(".abstain").count() ? await page.locator(".abstain").innerText() : null,
      timing: await page.evaluate(() => window.__flowbabyTimings.search),
    };
  }
  const searchFor = async (query) => {
    await page.fill("#q", query);
    await page.press("#q", "Enter");
    await page.waitForFunction((q) => document.querySelector("#results") && document.querySelector("#results").dataset.query === q, query);
  };
  await searchFor(config.queries[1]);  // the README's picture: a memory placed by the graph, with its `via`
  await shot(page, "browser-search");
  await axe(page, seen, "search");
  await searchFor(config.queries[0]);

  // Open a result: its memory, versions and supersession chain.
  await page.click(`.result[data-topic="${config.versionedTopic}"] h3 a`);
  await page.waitForSelector(".version", { timeout: 20000 });
  seen.views.memory = {
    versions: await page.$$eval(".version", (v) => v.map((x) => Number(x.dataset.version))),
    chain: await page.locator("#chain").innerText(),
    entities: await page.$$eval("#entities li", (l) => l.length),
  };
  await page.click(".version details summary");
  seen.views.memory.changes = await page.locator(".version details").first().innerText();
  await shot(page, "browser-memory");
  await axe(page, seen, "memory");

  // An implied supersession, confirmed from the older memory's page.
  await page.goto(`${config.base}/#/memory/${encodeURIComponent(config.impliedTopic)}`);
  await page.waitForSelector(".implied button", { timeout: 20000 });
  seen.views.implied = { before: await page.locator("#chain").innerText() };
  await page.click(".implied button");
  await page.click("#confirm-ok");
  await page.waitForFunction(() => !document.querySelector(".implied") && document.querySelector(".version"), null, { timeout: 20000 });
  seen.views.implied.after = await page.locator("main .meta").first().innerText();

  // The graph: click an entity on the canvas, see its memories.
  await page.goto(`${config.base}/#/graph`);
  await page.waitForSelector("canvas.graph[data-drawn]", { timeout: 30000 });
  const target = await page.evaluate((name) => {
    const node = [...document.querySelectorAll("#entity-list button")].find((b) => b.textContent === name);
    return node ? window.__flowbabyGraph.position(node.dataset.id) : null;
  }, config.entity);
  // The overview's labels (none may overlap), then the clicked entity's neighbourhood (every node named).
  seen.views.graph = { target, overview: await page.evaluate(() => window.__flowbabyGraph.labels()) };
  await shot(page, "browser-graph");
  if (target) await page.mouse.click(target.x, target.y);
  await page.waitForSelector("#entity-memories li", { timeout: 10000 }).catch(() => undefined);
  seen.views.graph.picked = await page.locator("#entity-detail h3").first().innerText().catch(() => null);
  seen.views.graph.memories = await page.$$eval("#entity-memories li a", (l) => l.map((a) => a.textContent));
  seen.views.graph.focused = await page.evaluate(() => ({ labels: window.__flowbabyGraph.labels(), shown: window.__flowbabyGraph.shown() }));
  await shot(page, "browser-graph-focus");
  await axe(page, seen, "graph");
  // The same drawing at 2,000 nodes (1,700 entities, 300 memories, 5,000 edges): time to the first
  // (and only) layout drawn, and one frame (what a pan, zoom or click costs).
  seen.timings.graph2000 = await page.evaluate(async () => {
    const { drawGraph } = await import(new URL("ui/assets/graph.js", document.baseURI).href);
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const nodes = Array.from({ length: 2000 }, (_, i) => (i < 300
      ? { id: `m${i}`, kind: "memory", name: `Memory ${i}`, topic_id: `t${i}`, version: 1, status: "Active" }
      : { id: `e${i}`, kind: "entity", name: `entity ${i}`, entity_type: "concept" }));
    const edges = Array.from({ length: 5000 }, () => ({ source: `m${Math.floor(random() * 300)}`, target: `e${300 + Math.floor(random() * 1700)}` }));
    const canvas = document.createElement("canvas");
    canvas.className = "graph";
    document.querySelector("main").append(canvas);
    const started = performance.now();
    const drawing = drawGraph(canvas, { nodes, edges }, {});
    const firstFrameMs = Number(canvas.dataset.drawn) - started;
    const frame = performance.now();
    for (let i = 0; i < 20; i++) drawing.highlight(nodes[i * 50].id);
    const frameMs = (performance.now() - frame) / 20;
    canvas.remove();
    return { firstFrameMs, frameMs };
  });

  // Sessions: search across them, open a hit's context turns.
  await page.goto(`${config.base}/#/sessions?q=${encodeURIComponent(config.sessionQuery)}`);
  await page.waitForSelector(".session-hit button", { timeout: 30000 });
  await page.click(".session-hit button");
  await page.waitForSelector(".turn.hit", { timeout: 20000 });
  seen.views.sessions = {
    hits: await page.locator(".session-hit").count(),
    hitTurn: await page.locator(".turn.hit").first().innerText(),
    allTurns: await page.locator(".session-hit").first().locator(".turn").allInnerTexts(),
    turns: await page.locator(".session-hit").first().locator(".turn").count(),
  };
  await shot(page, "browser-sessions");
  await axe(page, seen, "sessions");

  // Activity: the audit feed, background operations, index status.
  await page.goto(`${config.base}/#/activity`);
  await page.waitForSelector("#audit-feed li", { timeout: 20000 });
  seen.views.activity = { feed: await page.$$eval("#audit-feed li", (l) => l.slice(0, 5).map((x) => x.textContent)), index: await page.locator("#index-status").innerText() };
  await shot(page, "browser-activity");
  await axe(page, seen, "activity");

  // Memories: the list (or the note that the server cannot list yet).
  await page.goto(`${config.base}/#/memories`);
  await page.waitForSelector("#memory-list > *", { timeout: 20000 });
  seen.views.memories = { text: (await page.locator("#memory-list").innerText()).slice(0, 400), rows: await page.locator("#memory-list tbody tr").count() };
  await shot(page, "browser-memories");
  await axe(page, seen, "memories");

  // Forget, with confirmation, then the memory is gone from search.
  if (config.forgetTopic) {
    const found = async () => {
      await page.goto(`${config.base}/#/search?q=${encodeURIComponent(config.forgetQuery)}`);
      await page.waitForFunction((q) => document.querySelector("#results") && document.querySelector("#results").dataset.query === q, config.forgetQuery, { timeout: 30000 });
      return page.$$eval(".result", (c) => c.map((x) => x.dataset.topic));
    };
    const before = await found();
    await page.goto(`${config.base}/#/memory/${encodeURIComponent(config.forgetTopic)}`);
    await page.waitForSelector("#forget");
    await page.click("#forget");
    const dialog = await page.waitForSelector("dialog[open]", { timeout: 10000 }).catch(() => null);
    seen.views.forget = { before, dialog: dialog ? await dialog.innerText() : null, note: null };
    if (dialog) {
      await page.click("#confirm-ok");
      await page.waitForFunction(() => location.hash.startsWith("#/memories"), null, { timeout: 60000 });
      seen.views.forget.after = await found();
    } else {
      seen.views.forget.note = await page.locator("main .row").innerText();
    }
  }

  // A person's corrections on the memory page: a new version from the Edit form, then "Superseded by".
  if (config.editTopic) {
    const memoryPage = async (topic) => {
      await page.goto(`${config.base}/#/memory/${encodeURIComponent(topic)}`);
      await page.waitForSelector("#edit");
    };
    await memoryPage(config.editTopic);
    await page.click("#edit");
    await page.fill("#edit-decisions", config.editDecision);
    await axe(page, seen, "edit");
    await page.click("#edit-save");
    await page.waitForFunction(() => document.querySelector("#edit-form") === null && document.querySelectorAll("article.version").length > 1, null, { timeout: 30000 });
    seen.views.edit = { versions: await page.$$eval("article.version", (l) => l.map((a) => Number(a.dataset.version))), newest: await page.locator("article.version").first().innerText() };
    await memoryPage(config.supersedeOlder);
    await page.click("#supersede");
    await page.fill("#supersede-newer", config.editTopic);
    await page.click("#supersede-save");
    await page.waitForSelector("dialog[open]", { timeout: 10000 });
    await page.click("#confirm-ok");
    await page.waitForFunction(() => /Superseded/.test(document.querySelector(".meta") ? document.querySelector(".meta").textContent : ""), null, { timeout: 30000 });
    seen.views.supersede = { meta: await page.locator(".meta").first().innerText(), chain: await page.locator("#chain").innerText() };
  }

  // A narrow window.
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${config.base}/#/search?q=${encodeURIComponent(config.queries[0])}`);
  await page.waitForFunction((q) => document.querySelector("#results") && document.querySelector("#results").dataset.query === q, config.queries[0], { timeout: 30000 });
  seen.narrowOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot(page, "browser-search-narrow");
  await axe(page, seen, "search-narrow");

}

// First meaningful paint of the memory list on fresh loads: ms from navigation start to its rows
// drawn, as the page measures it (window.__flowbabyTimings.memoriesPaint); then a filter and a page.
async function listPaint(context) {
  const list = await context.newPage();
  await list.goto(config.link);
  await list.waitForSelector("#q");
  const samples = [];
  for (let i = 0; i < 6; i++) {
    await list.goto("about:blank");
    await list.goto(`${config.base}/#/memories`);
    await list.waitForFunction(() => window.__flowbabyTimings && window.__flowbabyTimings.memoriesPaint, null, { timeout: 20000 });
    samples.push(await list.evaluate(() => window.__flowbabyTimings.memoriesPaint));
  }
  seen.timings.listPaintMs = samples;
  seen.timings.listRows = await list.locator("#memory-list tbody tr").count();
  await list.click("text=Next page");
  await list.waitForFunction(() => document.querySelector(".pager span") && document.querySelector(".pager span").textContent.startsWith("page 2"));
  seen.timings.secondPageFirst = await list.locator("#memory-list tbody tr td a").first().innerText();
  // The filter re-renders the list: wait for a new table body (not page 2's, which stays until the
  // view is replaced) holding rows, or the rows read may be the old ones or none.
  await list.evaluate(() => { document.querySelector("#memory-list tbody").dataset.before = "filter"; });
  await list.selectOption("#f-status", "DecisionRecord");
  await list.click("form[aria-label=Filters] button");
  await list.waitForFunction(() => {
    const body = document.querySelector("#memory-list tbody");
    return location.hash.includes("status=DecisionRecord") && body && !body.dataset.before && body.querySelector("tr");
  });
  seen.timings.filteredStatuses = await list.$$eval("#memory-list tbody tr .status", (s) => [...new Set(s.map((x) => x.textContent))]);
  await list.goto(`${config.base}/#/memories`);
  await list.waitForSelector("#memory-list tbody tr");
  await shot(list, "browser-memories");
  await axe(list, seen, "memories-10k");
  await list.close();
}

drive(seen, main);
