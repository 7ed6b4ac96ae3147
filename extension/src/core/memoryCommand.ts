/**
 * What the person's memory commands (Forget, Edit, Mark Superseded) share: the pick list over
 * listMemories, scope-aware (docs/contract/21-user-scope.md), the injected dialogs and the failure text.
 * Free of `vscode`, like the commands, so the node tests script the dialogs against a real bridge.
 */
import { BridgeCall, ingestFailure } from "./agentApi";
import { JsonObject } from "./jsonRpc";

/** Memories offered in the pick list (newest first); any other topicId can be typed. */
export const PICK_LIMIT = 200;

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

/** The dialogs every memory command asks through (VS Code's in glue/, scripted in the tests). */
export interface MemoryDialogs {
  /** Resolves with the chosen item's or a typed topicId, or undefined when cancelled. */
  pick(items: MemoryPick[], title: string): Promise<string | undefined>;
  /** A modal warning with the command's button; resolves true only when it is pressed. */
  confirm(message: string, detail: string): Promise<boolean>;
  info(message: string): void;
  error(message: string): void;
}

/** A memory command's bridge, dialogs and activity channel. */
export interface MemoryCommandDeps<Ui extends MemoryDialogs> {
  call: BridgeCall;
  ui: Ui;
  /** One line to the "Flowbaby Agent Activity" channel. */
  activity: (line: string) => void;
}

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

/** The pick list of `scope`'s newest memories, or listMemories' refusal (an object, not an array). */
export async function listPicks(call: BridgeCall, scope: "all" | "project"): Promise<MemoryPick[] | JsonObject> {
  const listed = await call("listMemories", { order: "newest", limit: PICK_LIMIT, scope }).catch(ingestFailure);
  return listed.success === true ? pickItems((listed.memories as JsonObject[]) ?? []) : listed;
}

/** `{scope: "user"}` for a picked memory of the user store, else nothing (the project's, the default). */
export function scopeOf(items: MemoryPick[], topicId: string): JsonObject {
  return items.find((item) => item.topicId === topicId)?.scope === "user" ? { scope: "user" } : {};
}

/** A refusal as the person reads it: `CODE: message`. */
export function failureText(result: JsonObject): string {
  const message = typeof result.message === "string" ? result.message : String(result.error ?? "");
  return `${String(result.errorCode ?? "FLOWBABY_ERROR")}: ${message}`;
}
