// Drives the memory browser's graph view in headless Debian chromium for tests/e2e/test_graph_view.py
// (and the demo-sized checks of drive.js share its idea): the overview's draw time and label boxes,
// then search-to-focus and the neighbourhood's labels, axe-core on both, the docs/ screenshots.
// Env: CONFIG (a JSON file written by the test), OUT (what this script saw, JSON).
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");
const finish = require("./finish");

const config = JSON.parse(fs.readFileSync(process.env.CONFIG, "utf8"));
const AXE = fs.readFileSync(path.join(__dirname, "node_modules", "axe-core", "axe.min.js"), "utf8");
const seen = { requests: [], blocked: [], axe: {}, console: [], drawMs: [] };
const save = () => fs.writeFileSync(process.env.OUT, JSON.stringify(seen, null, 2));

async function axe(page, name) {
  await page.evaluate(AXE);
  seen.axe[name] = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, target: v.nodes[0] && v.nodes[0].target }));
  });
}

async function shot(page, name) {
  if (config.shots) await page.screenshot({ path: path.join(config.shots, `${name}.png`) });
}

/** Open the graph view from another view (as a person does) and wait for its first drawing. */
async function openGraph(page) {
  await page.goto(`${config.base}/#/search`);
  await page.waitForSelector("#q");
  await page.click("#nav a[data-view=graph]");
  await page.waitForSelector("#graph-canvas[data-draw-ms]", { timeout: 30000 });
  seen.drawMs.push(Number(await page.getAttribute("#graph-canvas", "data-draw-ms")));
}

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      seen.requests.push(`${route.request().method()} ${url.protocol}//${url.host}${url.pathname}`);
      if (["127.0.0.1", "localhost", "[::1]"].includes(url.hostname) || url.protocol === "blob:" || url.protocol === "data:") return route.continue();
      seen.blocked.push(url.href);
      return route.abort();
    });
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
    await axe(page, "graph-overview");
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
    await axe(page, "graph-focus");
  } finally {
    save();
    await browser.close();
  }
}

finish(main, seen, save);
