/** The Copilot instructions file: written from the briefing, ignored by git, never the user's file,
 * removed when empty or on deactivation; and fed by a real bridge's `briefing`. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { BridgeClient } from "../src/core/bridgeClient";
import { JsonObject } from "../src/core/jsonRpc";
import { CopilotInstructions, INSTRUCTIONS_FILE, MARKER, excludeFile } from "../src/core/copilotInstructions";
import { flowbabyCommand, ingestPayload, tempWorkspace } from "./helpers";

const BRIEFING = "Flowbaby workspace memory (one line per memory):\nCurrent decisions:\n- Cache: Use Redis [topicId t1]";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

function repository(): string {
  const root = tempWorkspace("fb-copilot-");
  git(root, "init", "-q");
  fs.mkdirSync(path.join(root, ".github"));
  fs.writeFileSync(path.join(root, ".github", "copilot-instructions.md"), "Use tabs.\n");
  return root;
}

describe("Copilot instructions file", () => {
  it("holds the briefing under applyTo ** and git never lists it; an empty briefing removes it", async () => {
    const root = repository();
    let briefing = BRIEFING;
    const file = new CopilotInstructions({ workspace: root, fetchBriefing: async () => briefing });
    assert.equal(await file.update(), "written");
    const text = fs.readFileSync(path.join(root, INSTRUCTIONS_FILE), "utf8");
    assert.match(text, /^---\napplyTo: "\*\*"\n/);
    assert.ok(text.includes(MARKER) && text.includes("- Cache: Use Redis [topicId t1]"));
    assert.equal(git(root, "status", "--porcelain", "--untracked-files=all"), "?? .github/copilot-instructions.md\n");
    assert.equal(await file.update(), "unchanged");
    briefing = "Flowbaby workspace memory:\n- Cache: Use Valkey [topicId t1]";
    assert.equal(await file.update(), "written");
    assert.ok(fs.readFileSync(path.join(root, INSTRUCTIONS_FILE), "utf8").includes("Use Valkey"));
    const exclude = fs.readFileSync(excludeFile(root)!.file, "utf8");
    assert.equal(exclude.split("\n").filter((line) => line === "/.github/instructions/flowbaby-memory.instructions.md*").length, 1);

    briefing = "";
    assert.equal(await file.update(), "removed");
    assert.ok(!fs.existsSync(path.join(root, ".github", "instructions")));
    assert.equal(fs.readFileSync(path.join(root, ".github", "copilot-instructions.md"), "utf8"), "Use tabs.\n");
  });

  it("never writes over or removes a file of the user's own, and keeps the file when the bridge fails", async () => {
    const root = repository();
    const own = path.join(root, INSTRUCTIONS_FILE);
    fs.mkdirSync(path.dirname(own), { recursive: true });
    fs.writeFileSync(own, "---\napplyTo: \"**\"\n---\nMy own notes.\n");
    const lines: string[] = [];
    const file = new CopilotInstructions({ workspace: root, fetchBriefing: async () => BRIEFING, log: (line) => lines.push(line) });
    assert.equal(await file.update(), "user-file");
    assert.equal(file.remove(), false);
    assert.equal(fs.readFileSync(own, "utf8"), "---\napplyTo: \"**\"\n---\nMy own notes.\n");
    assert.match(lines[0], /is not flowbaby's/);

    fs.rmSync(own);
    let fail = false;
    const flaky = new CopilotInstructions({
      workspace: root,
      fetchBriefing: async () => {
        if (fail) throw new Error("bridgeUnavailable");
        return BRIEFING;
      },
    });
    assert.equal(await flaky.update(), "written");
    fail = true;
    assert.equal(await flaky.update(), "failed");
    assert.ok(fs.readFileSync(own, "utf8").includes("Use Redis"));
    assert.equal(flaky.remove(), true);
    assert.ok(!fs.existsSync(own));
  });

  it("excludes through the main repository from a linked worktree", () => {
    const main = repository();
    git(main, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init");
    const linked = path.join(tempWorkspace("fb-copilot-wt-"), "wt");
    git(main, "worktree", "add", "-q", linked);
    const found = excludeFile(path.join(linked));
    assert.equal(fs.realpathSync(path.dirname(path.dirname(found!.file))), fs.realpathSync(path.join(main, ".git")));
  });

  it("debounces: a burst of refreshes makes one briefing request", async () => {
    const root = repository();
    let calls = 0;
    const file = new CopilotInstructions({
      workspace: root,
      debounceMs: 50,
      fetchBriefing: async () => {
        calls += 1;
        return BRIEFING;
      },
    });
    for (let i = 0; i < 5; i++) file.refresh();
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(calls, 1);
    assert.ok(fs.existsSync(path.join(root, INSTRUCTIONS_FILE)));
    file.dispose();
  });
});

describe("Copilot instructions from a real bridge's briefing", { timeout: 240_000 }, () => {
  const workspace = tempWorkspace("fb-ext-", { graph: false });
  const bridge = new BridgeClient({ workspace, command: flowbabyCommand(), healthTimeoutMs: 60_000 });
  before(async () => {
    await bridge.start();
  });
  after(async () => {
    await bridge.stop();
  });

  it("writes the stored decision into the file", async () => {
    const fetchBriefing = async () => {
      const reply = await bridge.call("briefing", { agentName: "VS Code language model tool" });
      if (reply.success === false) throw new Error(String(reply.errorCode));
      return String(reply.text ?? "");
    };
    const file = new CopilotInstructions({ workspace, fetchBriefing });
    assert.equal(await file.update(), "absent"); // nothing stored yet: no file
    const stored = await bridge.call("ingestForAgent", ingestPayload("redis-cache") as JsonObject);
    assert.equal(stored.success, true, JSON.stringify(stored));
    assert.equal(await file.update(), "written");
    const text = fs.readFileSync(path.join(workspace, INSTRUCTIONS_FILE), "utf8");
    assert.match(text, /Redis caching decision: Use Redis with a 15 minute TTL .*\[topicId redis-cache\]/);
    assert.equal(file.remove(), true);
  });
});
