// Drives headless Debian chromium (playwright-core) for tests/e2e/test_browser_hardening.py: a person
// signed in to the memory browser who also visits another local user's listener, opens memories with
// odd topicIds and forgets them, and follows what `flowbaby ui` handed to the browser.
// Env: CONFIG (a JSON file written by the test), OUT (what this script saw, JSON). Each step records
// its own outcome (or error), so one failing step does not hide what the others saw.
const fs = require("fs");
const { chromium } = require("playwright-core");
const finish = require("./finish");

const config = JSON.parse(fs.readFileSync(process.env.CONFIG, "utf8"));
const seen = { steps: {}, console: [] };
const save = () => fs.writeFileSync(process.env.OUT, JSON.stringify(seen, null, 2));

async function step(name, body) {
  const started = Date.now();
  try {
    seen.steps[name] = await body();
  } catch (error) {
    seen.steps[name] = { error: String(error && error.message ? error.message : error).slice(0, 600) };
  }
  seen.steps[name].ms = Date.now() - started;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on("console", (m) => seen.console.push(`${m.type()}: ${m.text().slice(0, 300)}`));

    await step("signin", async () => {
      await page.goto(config.link);
      await page.waitForSelector("#q", { timeout: 20000 });
      return { url: page.url(), cookies: (await context.cookies()).map((c) => c.name) };
    });

    // Item 3: the person opens a page of another local listener; it receives what the browser sends.
    await step("visit", async () => {
      const reply = await page.goto(`${config.listener}/hello`);
      return { status: reply ? reply.status() : null };
    });

    // Item 6: that listener's page frames the memory browser (plain and as the VS Code webview would).
    await step("frame", async () => {
      await page.goto(`${config.listener}/frame`);
      await sleep(300);  // goto waited for the load event, which waits for the frames
      const frames = [];
      for (const frame of page.frames()) {
        if (frame === page.mainFrame()) continue;
        const rendered = await frame.locator("#nav").count().catch(() => 0);
        frames.push({ url: frame.url(), rendered });
      }
      return { frames };
    });

    // Item 14: open each memory with an odd topicId, then forget it from its page.
    for (const topic of config.topics || []) {
      await step(`open:${topic}`, async () => {
        await page.goto(`${config.base}/#/memory/${encodeURIComponent(topic)}`);
        await page.waitForSelector(".version, main .error", { timeout: 20000 });
        const shown = {
          versions: await page.locator(".version").count(),
          meta: await page.$eval("main .meta", (e) => e.innerText).catch(() => ""),
          error: await page.$eval("main .error", (e) => e.innerText).catch(() => null),
        };
        if (!shown.versions) return shown;
        await page.click("#forget");
        const dialog = await page.waitForSelector("dialog[open]", { timeout: 10000 });
        shown.dialog = await dialog.innerText();
        await page.click("#confirm-ok");
        await page.waitForFunction(() => location.hash.startsWith("#/memories"), null, { timeout: 30000 });
        shown.forgotten = true;
        return shown;
      });
    }

    // Item 12: a new browser window on what `flowbaby ui` handed to the browser.
    if (config.handed) {
      await step("handed", async () => {
        const fresh = await browser.newContext();
        const opened = await fresh.newPage();
        await opened.goto(config.handed);
        await opened.waitForSelector("#q, #signin-token", { timeout: 20000 });
        const result = { url: opened.url(), signedIn: (await opened.locator("#q").count()) > 0 };
        await fresh.close();
        return result;
      });
    }
  } finally {
    save();
    await browser.close();
  }
}

finish(main, seen, save);
