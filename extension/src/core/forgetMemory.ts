/**
 * "Flowbaby: Forget Memory" (INGEST_CONTRACT.md 20.3): pick a memory, dry run, a modal warning,
 * then the real forget. Free of `vscode`: the dialogs are injected, so the node tests can script
 * the picks and the confirmation against a real bridge.
 */
import { ingestFailure, isoSeconds } from "./agentApi";
import { JsonObject } from "./jsonRpc";
import { MemoryCommandDeps, MemoryDialogs, MemoryPick, failureText, listPicks, scopeOf } from "./memoryCommand";

export const FORGET_BUTTON = "Forget";

/** Its `confirm` shows a `FORGET_BUTTON` button. */
export type ForgetUi = MemoryDialogs;
export type ForgetDeps = MemoryCommandDeps<ForgetUi>;

export type ForgetOutcome =
  | { status: "cancelled"; topicId?: string }
  | { status: "forgotten"; topicId: string; result: JsonObject }
  | { status: "failed"; topicId?: string; result: JsonObject };

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
    const listed = await listPicks(deps.call, "all");
    if (!Array.isArray(listed)) {
      return fail(listed, undefined, "(list)");
    }
    items = listed;
    topicId = (await deps.ui.pick(items, "Flowbaby: Forget Memory"))?.trim();
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
