// Drives the memory browser's scope marks and filter for tests/e2e/test_browser_scope.py in headless Debian
// chromium: the memory list with both stores, then only the person's, a user memory's own page, the search
// marks; axe-core on the list. Env: CONFIG (a JSON file written by the test), OUT (what this script saw).
const { config, drive, axe } = require("./common");

const seen = { console: [], axe: {} };

/** Each row of the memory list: its topic link's text and href, and its scope mark. */
const rows = (page) => page.$$eval("#memory-list tbody tr", (trs) => trs.map((tr) => ({
  topic: tr.querySelector("a").textContent, href: tr.querySelector("a").getAttribute("href"),
  scope: (tr.querySelector(".chip.scope") || {}).textContent || null,
})));

async function main(context) {
  const page = await context.newPage();
  page.on("pageerror", (e) => seen.console.push(`pageerror: ${String(e).slice(0, 300)}`));
  await page.goto(config.link);
  await page.waitForSelector("#q", { timeout: 20000 });
  await page.goto(`${config.base}/#/memories`);
  await page.waitForSelector("#memory-list tbody tr", { timeout: 20000 });
  seen.both = await rows(page);
  seen.filter = await page.$$eval("#f-scope option", (options) => options.map((o) => [o.value, o.textContent, o.selected]));
  await axe(page, seen, "list");
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
}

drive(seen, main);
