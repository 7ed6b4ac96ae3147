/** Shared test helpers: the real `flowbaby` of this checkout and throwaway workspaces. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { BridgeCall } from "../src/core/agentApi";
import { BridgeClient } from "../src/core/bridgeClient";
import { FlowbabyCommand, resolveFlowbabyCommand, workspaceExecutable } from "../src/core/executable";
import { MemoryDialogs, MemoryPick } from "../src/core/memoryCommand";

/** The repository root (extension/out/test -> ../../..). */
export const REPO = path.resolve(__dirname, "..", "..", "..");

/** FLOWBABY_BIN, else the checkout's .venv, else PATH. */
export function flowbabyCommand(): FlowbabyCommand {
  const explicit = process.env.FLOWBABY_BIN ?? workspaceExecutable(REPO);
  const command = resolveFlowbabyCommand({ command: explicit });
  if (!command) {
    throw new Error("flowbaby not found: set FLOWBABY_BIN or run `make setup` in the repository");
  }
  return command;
}

const created: string[] = [];
process.on("exit", () => {
  for (const folder of created) fs.rmSync(folder, { recursive: true, force: true });
});

// Every bridge of the tests reads the user scope (docs/contract/21-user-scope.md) from a store of the test
// process's own, never the developer's ~/.local/share/flowbaby/user (as tests/conftest.py does).
const userStoreParent = fs.mkdtempSync(path.join(os.tmpdir(), "fb-ext-user-"));
created.push(userStoreParent);
process.env.FLOWBABY_USER_STORE = path.join(userStoreParent, "user");

/** A folder removed when the test file's process exits. `graph: false` writes FLOWBABY_BUILD_GRAPH=0
 * into its .env: a bridge there starts no cognee worker (~10 CPU-s), for tests that never read the graph. */
export function tempWorkspace(prefix = "fb-ext-", options: { graph?: boolean } = {}): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(folder);
  if (options.graph === false) {
    fs.writeFileSync(path.join(folder, ".env"), "FLOWBABY_BUILD_GRAPH=0\n");
  }
  return folder;
}

export function waitFor<T>(emitter: NodeJS.EventEmitter, event: string, timeoutMs: number): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${event}" within ${timeoutMs} ms`)), timeoutMs);
    emitter.once(event, (...args: T[]) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

export function ingestPayload(topicId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    topic: "Redis caching decision",
    context: "We moved the session cache from Memcached to Redis because sessions must survive restarts.",
    decisions: ["Use Redis with a 15 minute TTL"],
    agentName: "unit-test agent",
    metadata: { topicId, createdAt: "2025-03-01T10:00:00Z", updatedAt: "2025-03-01T10:00:00Z", planId: "plan-015" },
    ...extra,
  };
}

/** A real bridge on a new graph-less workspace, started before the enclosing describe's tests with `memories`
 * ([topicId, topic] over ingestPayload) stored and stopped after them: the memory commands' tests share it. */
export function bridgeWithMemories(prefix: string, memories: [string, string][]): BridgeCall {
  const bridge = new BridgeClient({ workspace: tempWorkspace(prefix, { graph: false }), command: flowbabyCommand(), healthTimeoutMs: 60_000 });
  before(async () => {
    assert.equal((await bridge.start()).status, "ready");
    for (const [topicId, topic] of memories) {
      const stored = await bridge.call("ingestForAgent", { ...ingestPayload(topicId), topic });
      assert.equal(stored.success, true, JSON.stringify(stored));
    }
  });
  after(async () => {
    await bridge.stop();
  });
  return (method, params) => bridge.call(method, params);
}

/** Memory command dialogs that answer from `script` and record every pick list, confirmation and toast:
 * the Forget, Edit and Supersede tests script the same dialogs. */
export function scriptedDialogs(script: { pick: (items: MemoryPick[]) => string | undefined; confirm: boolean }) {
  const seen = { picks: [] as MemoryPick[][], confirms: [] as string[][], infos: [] as string[], errors: [] as string[] };
  const ui: MemoryDialogs = {
    pick: async (items) => {
      seen.picks.push(items);
      return script.pick(items);
    },
    confirm: async (message, detail) => {
      seen.confirms.push([message, detail]);
      return script.confirm;
    },
    info: (message) => seen.infos.push(message),
    error: (message) => seen.errors.push(message),
  };
  return { ui, seen };
}
