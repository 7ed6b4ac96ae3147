// Drives code-server in headless Debian chromium (playwright-core, executablePath: no browser
// download). Confirms the tools' confirmation dialogs, answers Mark Memory Superseded's two pick lists
// (SUPERSEDE_PICKS) and its warning, records toasts, reads the "Flowbaby Agent Activity" Output channel
// and the status bar, and takes the README screenshot.
// Env: URL, CHROMIUM, RESULTS (the test agent's file), OUT (what this script saw), SCREENSHOT, TIMEOUT_MS.
const fs = require("fs");
const { chromium } = require("playwright-core");

const env = (name) => {
  if (!process.env[name]) throw new Error(`${name} is required`);
  return process.env[name];
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Mark Memory Superseded's pick lists, by title: the row (memory topic) the driver clicks in each. */
const SUPERSEDE_PICKS = [
  [/no longer current/, "E2E tool note"],
  [/that supersedes/, "E2E caching decision"],
];

async function main() {
  const seen = { toasts: [], dialogs: [], picks: [], activity: "", statusBar: "", mcpServers: [], tabs: [], agentDone: false, log: [] };
  const save = () => fs.writeFileSync(env("OUT"), JSON.stringify(seen, null, 2));
  const deadline = Date.now() + Number(process.env.TIMEOUT_MS || 420000);
  const browser = await chromium.launch({ executablePath: env("CHROMIUM"), headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on("console", (message) => {
      if (message.type() === "error") seen.log.push(message.text().slice(0, 300));
    });
    await page.goto(env("URL"), { waitUntil: "domcontentloaded" });
    await page.waitForSelector(".monaco-workbench", { timeout: 120000 });

    const poll = async () => {
      for (const toast of await page.locator(".notification-toast .notification-list-item-message").allInnerTexts()) {
        if (!seen.toasts.includes(toast)) seen.toasts.push(toast);
      }
      const dialog = page.locator(".monaco-dialog-box");
      if (await dialog.count()) {
        const textOf = (await dialog.first().innerText()).replace(/\s+/g, " ").trim();
        seen.dialogs.push(textOf);
        // Confirm: VS Code labels the tools' primary button "Yes" (Cancel comes first on Linux);
        // the workspace's own .venv/bin/flowbaby is confirmed with "Run it", a supersession with "Mark Superseded".
        const confirm = /^\s*(Yes|Run it|Mark Superseded)\s*$/;
        await dialog.first().locator(".dialog-buttons .monaco-button", { hasText: confirm }).first().click();
      }
      const title = page.locator(".quick-input-widget:visible .quick-input-title");
      const titleText = (await title.count()) ? await title.first().innerText() : "";
      const wanted = SUPERSEDE_PICKS.find(([pattern]) => pattern.test(titleText));
      const row = wanted && page.locator(".quick-input-widget .monaco-list-row", { hasText: wanted[1] });
      if (row && (await row.count())) {
        await row.first().click();
        seen.picks.push(`${titleText.trim()} -> ${wanted[1]}`);
      }
      try {
        seen.agentDone = JSON.parse(fs.readFileSync(env("RESULTS"), "utf8")).done === true;
      } catch {
        /* not written yet */
      }
    };
    while (!seen.agentDone && Date.now() < deadline) {
      await poll();
      save();
      await sleep(500);
    }
    // The success toast of the graph build may come after the agent saw the operation complete.
    const toastDeadline = Math.min(deadline, Date.now() + 60000);
    while (!seen.toasts.some((toast) => /memory graph built|graph building failed/.test(toast)) && Date.now() < toastDeadline) {
      await poll();
      await sleep(500);
    }
    await sleep(1500);
    const picks = page.locator(".quick-input-widget .monaco-list-row");
    await picks.first().waitFor({ timeout: 15000 }).catch(() => undefined);
    seen.mcpServers = (await picks.allInnerTexts()).map((row) => row.replace(/\s+/g, " ").trim());
    await page.keyboard.press("Escape");
    seen.tabs = (await page.locator(".tabs-container .tab").allInnerTexts()).map((tab) => tab.trim());
    // The memory browser's webview: its frame to the loopback server, signed in, showing the list.
    let browserFrame;
    for (const until = Date.now() + 60000; !browserFrame && Date.now() < until; await sleep(500)) {
      browserFrame = page.frames().find((frame) => frame.url().includes("embedded=1"));
    }
    if (browserFrame) {
      await browserFrame.waitForSelector("#memory-list > *", { timeout: 60000 }).catch(() => undefined);
      seen.browser = { url: browserFrame.url(), list: (await browserFrame.locator("#memory-list").innerText().catch(() => "")).slice(0, 2000) };
    }
    await poll();
    // VS Code shows only a few toasts at once; the others go straight to the notification centre: read it
    // too. Its status bar bell opens it whatever holds the keyboard (the memory browser's webview may).
    const bell = page.locator('[id="status.notifications"]');
    if (await bell.count()) {
      await bell.first().click();
    } else {
      await page.keyboard.press("F1");
      await page.keyboard.type("Notifications: Show Notifications");
      await page.keyboard.press("Enter");
    }
    const centre = page.locator(".notifications-center .notification-list-item-message");
    await centre.first().waitFor({ timeout: 10000 }).catch(() => undefined);
    for (const toast of await centre.allInnerTexts()) {
      if (!seen.toasts.includes(toast)) seen.toasts.push(toast);
    }
    await page.keyboard.press("Escape");
    // Rendered lines use no-break spaces and wrap: join each wrapped line back to its "[…]" start.
    const rendered = (await page.locator(".part.panel .monaco-editor .view-lines").allInnerTexts()).join("\n");
    seen.activity = rendered.replace(/\u00a0/g, " ").replace(/\n(?!\[)/g, "");
    seen.statusBar = (await page.locator(".statusbar-item").allInnerTexts()).filter((item) => item.includes("Flowbaby")).join(" | ");
    await page.screenshot({ path: env("SCREENSHOT") });
  } finally {
    save();
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
