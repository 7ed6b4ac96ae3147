// Drives the memory browser's graph view in headless Debian chromium for tests/e2e/test_graph_view.py
// (and the demo-sized checks of drive.js share its idea): the overview's draw time and label boxes,
// then search-to-focus and the neighbourhood's labels, axe-core on both, the docs/ screenshots.
// Env: CONFIG (a JSON file written by the test), OUT (what this script saw, JSON).
const { config, drive, loopbackOnly, axe, shot } = require("./common");

const seen = { requests: [], blocked: [], axe: {}, console: [], drawMs: [] };

/** Open the graph view from another view (as a person does) and wait for its first drawing. */
async function openGraph(page) {
  await page.goto(`${config.base}/#/search`);
  await page.waitForSelector("#q");
  await page.click("#nav a[data-view=graph]");
  await page.waitForSelector("#graph-canvas[data-draw-ms]", { timeout: 30000 });
  seen.drawMs.push(Number(await page.getAttribute("#graph-canvas", "data-draw-ms")));
}

async function main(context) {
  await loopbackOnly(context, seen);
  const page = await context.newPage();
  page.on("pageerror", (e) => seen.console.push(`pageerror: ${String(e).slice(0, 300)}`));
  await page.goto(config.link);
  await page.waitForSelector("#q", { timeout: 20000 });
  // Cold: a new page straight onto the graph, the first graph the server is asked for since it started;
  // from the navigation's start to the overview painted.
  await page.goto("about:blank");
  await page.goto(`${config.base}/#/graph`);
  await page.waitForSelector("#graph-canvas[data-drawn-at]", { timeout: 30000 });
  seen.coldMs = Number(await page.getAttribute("#graph-canvas", "data-drawn-at"));
  seen.coldFetchMs = await page.evaluate(() => window.__flowbabyTimings.graph.fetchMs);
  // What was drawn is the overview: a second later every node is where it was (nothing still moving).
  const where = () => page.evaluate((ids) => ids.map((id) => window.__flowbabyGraph.position(id)), config.still);
  seen.still = [await where()];
  await page.waitForTimeout(1000);
  seen.still.push(await where());
  for (let i = 0; i < 3; i++) await openGraph(page);  // warm: the server's snapshot is kept
  seen.nodes = await page.evaluate(() => window.__flowbabyTimings.graph.nodes);
  seen.fetchMs = await page.evaluate(() => window.__flowbabyTimings.graph.fetchMs);
  seen.groups = await page.evaluate(() => window.__flowbabyGraph.groups());
  seen.overview = await page.evaluate(() => window.__flowbabyGraph.labels());
  await shot(page, `browser-graph${config.suffix}`);
  await axe(page, seen, "graph-overview");
  // Search to focus: type the name, Enter.
  await page.fill("#entity-filter", config.focus);
  await page.press("#entity-filter", "Enter");
  await page.waitForSelector("#entity-detail h3", { timeout: 10000 });
  seen.focused = {
    picked: await page.locator("#entity-detail h3").first().innerText(),
    labels: await page.evaluate(() => window.__flowbabyGraph.labels()),
    shown: await page.evaluate(() => window.__flowbabyGraph.shown()),
  };
  // The keyboard in the entity list names what it focuses, even outside the neighbourhood shown.
  await page.focus("#entity-list li:last-child button");
  seen.focused.keyboard = await page.evaluate(() => window.__flowbabyGraph.labels());
  await shot(page, `browser-graph${config.suffix}-focus`);
  await axe(page, seen, "graph-focus");
}

drive(seen, main);
