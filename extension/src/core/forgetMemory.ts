/**
 * "Flowbaby: Forget Memory" (INGEST_CONTRACT.md 20.3): pick a memory, dry run, a modal warning,
 * then the real forget. Free of `vscode`: the dialogs are injected, so the node tests can script
 * the picks and the confirmation against a real bridge.
 */
import { BridgeCall, ingestFailure, isoSeconds } from "./agentApi";
import { JsonObject } from "./jsonRpc";

/** Memories offered in the pick list (newest first); any other topicId can be typed. */
export const PICK_LIMIT = 200;
export const FORGET_BUTTON = "Forget";

export interface MemoryPick {
  topicId: string;
  topic: string;
  /** The store that holds it (docs/contract/21-user-scope.md); `project` from a server without scopes. */
  scope: "project" | "user";
  /** QuickPick fields: topic as label, topicId (and, for the person's own, "yours") as description,
   * status and update date as detail. */
  label: string;
  description: string;
  detail: string;
}

export interface ForgetUi {
  /** Resolves with the chosen item's or a typed topicId, or undefined when cancelled. */
  pick(items: MemoryPick[]): Promise<string | undefined>;
  /** A modal warning with a `FORGET_BUTTON` button; resolves true only when it is pressed. */
  confirm(message: string, detail: string): Promise<boolean>;
  info(message: string): void;
  error(message: string): void;
}

export interface ForgetDeps {
  call: BridgeCall;
  ui: ForgetUi;
  /** One line to the "Flowbaby Agent Activity" channel. */
  activity: (line: string) => void;
}

export type ForgetOutcome =
  | { status: "cancelled"; topicId?: string }
  | { status: "forgotten"; topicId: string; result: JsonObject }
  | { status: "failed"; topicId?: string; result: JsonObject };

export function pickItems(memories: JsonObject[]): MemoryPick[] {
  return memories.map((memory) => {
    const topicId = String(memory.topicId);
    const topic = String(memory.topic ?? topicId);
    const updated = String(memory.updatedAt ?? "").slice(0, 10);
    const scope = memory.scope === "user" ? "user" : "project";
    const description = scope === "user" ? `${topicId} · yours (every project)` : topicId;
    return { topicId, topic, scope, label: topic, description, detail: `${String(memory.status)} · updated ${updated}` };
  });
}

/** `{scope: "user"}` for a picked memory of the user store, else nothing (the project's, the default). */
export function scopeOf(items: MemoryPick[], topicId: string): JsonObject {
  return items.find((item) => item.topicId === topicId)?.scope === "user" ? { scope: "user" } : {};
}

function failureText(result: JsonObject): string {
  const message = typeof result.message === "string" ? result.message : String(result.error ?? "");
  return `${String(result.errorCode ?? "FLOWBABY_ERROR")}: ${message}`;
}

export function forgetLine(topic: string, topicId: string | undefined, status: string, versions?: unknown, at = new Date()): string {
  const count = versions === undefined ? "" : ` - Versions: ${String(versions)}`;
  return `[Forget Memory] ${isoSeconds(at)} - Topic: ${topic} (${topicId ?? "-"})${count} - Status: ${status}`;
}

/** The whole command; `topicId` given (e.g. by another command) skips the pick, never the confirmation. */
export async function forgetMemoryCommand(deps: ForgetDeps, topicId?: string): Promise<ForgetOutcome> {
  const call = (method: string, params: JsonObject) => deps.call(method, params).catch(ingestFailure);
  const fail = (result: JsonObject, id: string | undefined, topic: string): ForgetOutcome => {
    deps.ui.error(`Flowbaby: forget ${id ? `"${topic}" ` : ""}failed: ${failureText(result)}`);
    deps.activity(forgetLine(topic, id, `error (${String(result.errorCode ?? "FLOWBABY_ERROR")})`));
    return { status: "failed", topicId: id, result };
  };

  let items: MemoryPick[] = [];
  if (!topicId) {
    const listed = await call("listMemories", { order: "newest", limit: PICK_LIMIT, scope: "all" });
    if (listed.success !== true) {
      return fail(listed, undefined, "(list)");
    }
    items = pickItems((listed.memories as JsonObject[]) ?? []);
    topicId = (await deps.ui.pick(items))?.trim();
    if (!topicId) {
      return { status: "cancelled" };
    }
  }
  const topic = items.find((item) => item.topicId === topicId)?.topic ?? topicId;
  const scoped = scopeOf(items, topicId);

  const preview = await call("forgetMemory", { topicId, dryRun: true, ...scoped });
  if (preview.success !== true) {
    return fail(preview, topicId, topic);
  }
  const versions = Number(preview.versions);
  const confirmed = await deps.ui.confirm(
    `Forget "${topic}"? This removes it from every store and cannot be undone.`,
    `${topicId}: ${versions} version${versions === 1 ? "" : "s"} will be deleted from the memory store, the vectors, ` +
      "the search index and the knowledge graph. The audit log keeps only who forgot it and when.",
  );
  if (!confirmed) {
    deps.activity(forgetLine(topic, topicId, "cancelled", versions));
    return { status: "cancelled", topicId };
  }

  const result = await call("forgetMemory", { topicId, ...scoped });
  if (result.success !== true) {
    return fail(result, topicId, topic);
  }
  const pending = (result.pending as string[]) ?? [];
  deps.ui.info(
    `Flowbaby: forgot "${topic}" (${String(result.versions)} version${result.versions === 1 ? "" : "s"}).` +
      (pending.length ? ` Still finishing in the background: ${pending.join(", ")}.` : ""),
  );
  deps.activity(forgetLine(topic, topicId, "success", result.versions));
  return { status: "forgotten", topicId, result };
}
