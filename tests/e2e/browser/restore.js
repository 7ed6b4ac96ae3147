// Drives Restore on the memory browser's memory page for tests/e2e/test_memory_browser.py in headless Debian
// chromium: for each memory the test names, two tabs open its page (each with a Restore button on the
// decision that superseded it); the first tab's Restore undoes it, the second, stale, tab's Restore then
// finds nothing left to undo; a reload shows the decision undone. axe-core on the page after.
// Env: CONFIG (a JSON file written by the test), OUT (what this script saw, JSON).
const { config, drive, signedIn, axe } = require("./common");

const seen = { requests: [], blocked: [], console: [], axe: {}, memories: {} };

/** The page's decision cards: what each says, and whether it has a Restore button. */
const cards = (page) => page.$$eval("#reconcile .card.reconcile", (l) => l.map((c) => ({
  decision: c.dataset.decision, decidedBy: c.dataset.decidedBy, text: c.innerText, restore: Boolean(c.querySelector("button.restore")),
})));

async function main(context) {
  const page = await signedIn(context, seen);
  const stale = await context.newPage();  // the same session's second tab
  for (const topicId of config.topics) {
    const url = `${config.base}/#/memory/${encodeURIComponent(topicId)}`;
    const open = async (tab) => {
      await tab.goto(url);
      await tab.waitForSelector("#reconcile", { timeout: 30000 });
    };
    await open(page);
    await open(stale);
    const found = { before: await cards(page), status: await page.locator("main .meta .status").first().innerText() };
    await page.click("#reconcile button.restore");
    await page.waitForFunction(() => !document.querySelector("#reconcile button.restore") && document.querySelector("#reconcile .card.reconcile"), null, { timeout: 30000 });
    found.after = await cards(page);
    found.statusAfter = await page.locator("main .meta .status").first().innerText();
    // The stale tab still shows Restore: a second click finds nothing left to undo and says so.
    await stale.click("#reconcile button.restore");
    await stale.waitForSelector("#reconcile .card.reconcile [role=alert], #reconcile .card.reconcile .error", { timeout: 30000 });
    found.secondClick = await stale.locator("#reconcile .card.reconcile").first().innerText();
    await page.reload();
    await page.waitForSelector("#reconcile .card.reconcile", { timeout: 30000 });
    found.reloaded = await cards(page);
    seen.memories[topicId] = found;
  }
  await axe(page, seen, "restored");
}

drive(seen, main);
