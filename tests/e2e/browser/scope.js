// Drives the memory browser's scope marks and filter for tests/e2e/test_browser_scope.py in headless Debian
// chromium: the memory list with both stores, then only the person's, a user memory's own page, the search
// marks; axe-core on the list. Env: CONFIG (a JSON file written by the test), OUT (what this script saw).
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");
const finish = require("./finish");

const config = JSON.parse(fs.readFileSync(process.env.CONFIG, "utf8"));
const AXE = fs.readFileSync(path.join(__dirname, "node_modules", "axe-core", "axe.min.js"), "utf8");
const seen = { console: [] };
const save = () => fs.writeFileSync(process.env.OUT, JSON.stringify(seen, null, 2));

/** Each row of the memory list: its topic link's text and href, and its scope mark. */
const rows = (page) => page.$$eval("#memory-list tbody tr", (trs) => trs.map((tr) => ({
  topic: tr.querySelector("a").textContent, href: tr.querySelector("a").getAttribute("href"),
  scope: (tr.querySelector(".chip.scope") || {}).textContent || null,
})));

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on("pageerror", (e) => seen.console.push(`pageerror: ${String(e).slice(0, 300)}`));
    await page.goto(config.link);
    await page.waitForSelector("#q", { timeout: 20000 });
    await page.goto(`${config.base}/#/memories`);
    await page.waitForSelector("#memory-list tbody tr", { timeout: 20000 });
    seen.both = await rows(page);
    seen.filter = await page.$$eval("#f-scope option", (options) => options.map((o) => [o.value, o.textContent, o.selected]));
    await page.evaluate(AXE);
    seen.axe = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations.map((v) => ({ id: v.id, impact: v.impact })));
    await page.selectOption("#f-scope", "user");
    await page.click("form[aria-label=Filters] button.primary");
    await page.waitForFunction(() => location.hash.includes("scope=user"));
    await page.waitForSelector("#memory-list tbody tr", { timeout: 20000 });
    seen.user = await rows(page);
    await page.click("#memory-list tbody tr a");
    await page.waitForSelector("main .meta .chip.scope", { timeout: 20000 });
    seen.page = { title: await page.locator("main h2").first().innerText(), mark: await page.locator("main .meta .chip.scope").innerText() };
    await page.goto(`${config.base}/#/search?q=${encodeURIComponent(config.query)}`);
    await page.waitForSelector(".result", { timeout: 30000 });
    seen.search = await page.$$eval(".result", (cards) => cards.map((c) => ({ topic: c.querySelector("h3").textContent, scope: (c.querySelector(".chip.scope") || {}).textContent || null })));
  } finally {
    save();
    await browser.close();
  }
}

finish(main, seen, save);
