// What the browser drivers (drive.js, graph.js, attack.js, restore.js) share, so that each holds only its own walk:
// the test's CONFIG, Debian's chromium run headless with one 1280x800 context, what the driver saw
// written to OUT whether or not it failed (its error in `seen.error`, exit 1), every request outside
// loopback refused and recorded, a page signed in by the one-time link, axe-core on a page, the docs/ screenshots.
// Env: CONFIG (a JSON file written by the test), OUT (what the driver saw, JSON).
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const config = JSON.parse(fs.readFileSync(process.env.CONFIG, "utf8"));
const AXE = path.join(__dirname, "node_modules", "axe-core", "axe.min.js");

/** Run `walk(context, browser)` in a fresh chromium and write `seen` to OUT at its end, failed or not. */
function drive(seen, walk) {
  const save = () => fs.writeFileSync(process.env.OUT, JSON.stringify(seen, null, 2));
  const main = async () => {
    const browser = await chromium.launch({ executablePath: config.chromium, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      await walk(await browser.newContext({ viewport: { width: 1280, height: 800 } }), browser);
    } finally {
      save();
      await browser.close();
    }
  };
  main().then(() => process.exit(0), (error) => {
    seen.error = String(error && error.stack ? error.stack : error);
    save();
    process.exit(1);
  });
}

/** The page may reach loopback, blob: and data: only: every request goes to seen.requests, a refused one to seen.blocked. */
async function loopbackOnly(context, seen) {
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    seen.requests.push(`${route.request().method()} ${url.protocol}//${url.host}${url.pathname}`);
    if (["127.0.0.1", "localhost", "[::1]"].includes(url.hostname) || url.protocol === "blob:" || url.protocol === "data:") return route.continue();
    seen.blocked.push(url.href);
    return route.abort();
  });
}

/** A page of `context` signed in through the test's one-time link (loopback only, page errors in seen.console). */
async function signedIn(context, seen) {
  await loopbackOnly(context, seen);
  const page = await context.newPage();
  page.on("pageerror", (e) => seen.console.push(`pageerror: ${String(e).slice(0, 300)}`));
  await page.goto(config.link);
  await page.waitForSelector("#q", { timeout: 20000 });
  return page;
}

/** axe-core's violations on the page as it is, in seen.axe[name]. */
async function axe(page, seen, name) {
  // Evaluated through the DevTools protocol: the page's CSP (script-src 'self') stays in force.
  await page.evaluate(fs.readFileSync(AXE, "utf8"));
  seen.axe[name] = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, target: v.nodes[0] && v.nodes[0].target }));
  });
}

/** docs/<name>.png, when the test asked for screenshots. */
async function shot(page, name) {
  if (config.shots) await page.screenshot({ path: path.join(config.shots, `${name}.png`) });
}

module.exports = { config, drive, loopbackOnly, signedIn, axe, shot };
