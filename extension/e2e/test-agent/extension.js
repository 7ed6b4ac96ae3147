// The docs' "test agent extension": drives Flowbaby the way a third-party extension or Copilot
// would (commands with JSON strings, vscode.lm.invokeTool) and records every answer in
// <workspace>/e2e-results.json for tests/test_vscode_e2e.py to assert on.
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (result) => result.content.map((part) => part.value ?? "").join("");

exports.activate = async function activate() {
  const folder = vscode.workspace.workspaceFolders[0].uri.fsPath;
  const out = path.join(folder, "e2e-results.json");
  const results = { vscodeVersion: vscode.version, errors: [], done: false, stepMs: {} };
  const save = () => fs.writeFileSync(out, JSON.stringify(results, null, 2));
  const step = async (name, work) => {
    const started = Date.now();
    try {
      results[name] = await work();
    } catch (error) {
      results.errors.push(`${name}: ${error && error.stack ? error.stack : error}`);
    }
    results.stepMs[name] = Date.now() - started;
    save();
  };
  const run = async (command, ...args) => JSON.parse(await vscode.commands.executeCommand(command, ...args));
  const now = new Date().toISOString();

  await step("api", async () => {
    const api = await vscode.extensions.getExtension("flowbaby.flowbaby").activate();
    return {
      exports: Object.keys(api).sort(),
      invalid: api.validateIngestRequest({ topic: "", metadata: { topicId: "x", createdAt: "nope", updatedAt: now } }),
    };
  });
  await step("tools", async () =>
    vscode.lm.tools.filter((tool) => tool.name.startsWith("flowbaby")).map((tool) => ({ name: tool.name, description: tool.description })),
  );
  await step("ingest", () =>
    run(
      "Flowbaby.ingestForAgent",
      JSON.stringify({
        topic: "E2E caching decision",
        context: "The team moved session caching to Redis with a 15 minute TTL so sessions survive restarts.",
        decisions: ["Use Redis for the session cache", "TTL of 15 minutes"],
        agentName: "E2E Test Agent",
        metadata: { topicId: "e2e-caching", createdAt: now, updatedAt: now, planId: "plan-e2e" },
      }),
    ),
  );
  await step("invalidIngest", () => run("Flowbaby.ingestForAgent", JSON.stringify({ topic: "x", metadata: { topicId: "x", createdAt: "nope", updatedAt: "never" } })));
  await step("retrieve", () => run("Flowbaby.retrieveForAgent", JSON.stringify({ query: "Redis session cache TTL", maxResults: 3 })));
  await step("status", () => run("Flowbaby.backgroundStatus", results.ingest && results.ingest.operationId));
  await step("storeTool", async () =>
    text(
      await vscode.lm.invokeTool("flowbaby_storeMemory", {
        input: { topic: "E2E tool note", context: "Stored through vscode.lm.invokeTool by the e2e agent.", decisions: ["Keep the e2e small"] },
        toolInvocationToken: undefined,
      }),
    ),
  );
  await step("retrieveTool", async () =>
    text(
      await vscode.lm.invokeTool("flowbaby_retrieveMemory", {
        input: { query: "Redis session cache TTL", maxResults: 2 },
        toolInvocationToken: undefined,
      }),
    ),
  );
  await step("final", async () => {
    const id = results.ingest && results.ingest.operationId;
    for (let i = 0; i < 150; i++) {
      const status = await run("Flowbaby.backgroundStatus", id);
      if (status.status === "completed" || status.status === "failed") {
        return status;
      }
      await sleep(2000);
    }
    return { status: "timeout" };
  });
  // Mark Memory Superseded with no arguments: drive.js picks the tool's note as the older memory, the
  // caching decision as the newer, and confirms the modal warning; the outcome holds the older topicId.
  await step("supersede", () => vscode.commands.executeCommand("flowbaby.supersedeMemory"));
  // The commands for people: repair, install for Claude Code / OpenCode, stats + graph view.
  await step("people", async () => {
    await vscode.commands.executeCommand("flowbaby.repairIndex");
    await vscode.commands.executeCommand("flowbaby.installClaudeCode");
    await vscode.commands.executeCommand("flowbaby.installOpenCode");
    await vscode.commands.executeCommand("flowbaby.showStats");
    await vscode.commands.executeCommand("flowbaby.openMemoryBrowser");
    const read = (name) => (fs.existsSync(path.join(folder, name)) ? JSON.parse(fs.readFileSync(path.join(folder, name), "utf8")) : null);
    return { mcpJson: read(".mcp.json"), opencodeJson: read("opencode.json") };
  });
  await vscode.commands.executeCommand("flowbaby.showActivity");
  // Leaves VS Code's MCP server list open for the driver to read (the provider's "Flowbaby").
  void vscode.commands.executeCommand("workbench.mcp.listServer").then(undefined, () => undefined);
  results.done = true;
  save();
};
