/** Shared test helpers: the real `flowbaby` of this checkout and throwaway workspaces. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FlowbabyCommand, resolveFlowbabyCommand, workspaceExecutable } from "../src/core/executable";

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
