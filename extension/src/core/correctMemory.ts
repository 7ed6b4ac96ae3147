/**
 * "Flowbaby: Edit Memory" and "Flowbaby: Mark Memory Superseded" (issue 50, INGEST_CONTRACT.md 3.1 and
 * 3.12): a person corrects memory. Edit stores a new version of the picked memory (ingestForAgent with
 * its topicId) from its fields as the person changed them; supersede marks the older of two picked
 * memories Superseded by the newer (confirmSupersession with `listed: false`, after a modal warning).
 * Free of `vscode`: the dialogs are injected, so the node tests script them against a real bridge.
 */
import { ingestFailure } from "./agentApi";
import { JsonObject } from "./jsonRpc";
import { MemoryCommandDeps, MemoryDialogs, MemoryPick, failureText, listPicks, scopeOf } from "./memoryCommand";

/** The agentName of a version a person wrote (as `flowbaby memories edit` and the memory browser). */
export const EDITOR_NAME = "person";
export const SUPERSEDE_BUTTON = "Mark Superseded";
/** The fields a person edits; the rest (topicId, createdAt, planId) is kept from the newest version. */
export const EDITABLE = ["topic", "context", "decisions", "rationale", "openQuestions", "nextSteps", "references", "status"] as const;

/** Its `confirm` shows a `SUPERSEDE_BUTTON` button. */
export interface CorrectUi extends MemoryDialogs {
  /** The fields as the person left them (a JSON document in VS Code), or undefined when cancelled. */
  edit(fields: JsonObject): Promise<JsonObject | undefined>;
}

export type CorrectDeps = MemoryCommandDeps<CorrectUi>;

export type CorrectOutcome =
  | { status: "cancelled" }
  | { status: "done"; topicId: string; result: JsonObject }
  | { status: "failed"; result: JsonObject };

function failed(deps: CorrectDeps, what: string, result: JsonObject): CorrectOutcome {
  deps.ui.error(`Flowbaby: ${what} failed: ${failureText(result)}`);
  deps.activity(`[${what}] ${new Date().toISOString()} - Status: error (${String(result.errorCode ?? "FLOWBABY_ERROR")})`);
  return { status: "failed", result };
}

/** listMemories refused while offering the pick list: its reply, for `failed`. */
class ListRefused extends Error {
  constructor(readonly result: JsonObject) {
    super("listMemories refused");
  }
}

function refusal(error: unknown): JsonObject {
  if (error instanceof ListRefused) {
    return error.result;
  }
  throw error;
}

/** `scope`: which stores to offer (Edit: both; Supersede: the project's, as confirmSupersession works in one). */
async function pickMemory(
  deps: CorrectDeps,
  title: string,
  items?: MemoryPick[],
  scope: "all" | "project" = "project",
): Promise<[string | undefined, MemoryPick[]]> {
  if (!items) {
    const listed = await listPicks(deps.call, scope);
    if (!Array.isArray(listed)) {
      throw new ListRefused(listed);
    }
    items = listed;
  }
  return [(await deps.ui.pick(items, title))?.trim() || undefined, items];
}

/** Edit Memory: pick (unless `topicId` is given), edit the newest version's fields, store them as a new version. */
export async function editMemoryCommand(deps: CorrectDeps, topicId?: string): Promise<CorrectOutcome> {
  const call = (method: string, params: JsonObject) => deps.call(method, params).catch(ingestFailure);
  let items: MemoryPick[] = [];
  try {
    if (!topicId) [topicId, items] = await pickMemory(deps, "Flowbaby: Edit Memory", undefined, "all");
  } catch (error) {
    return failed(deps, "Edit Memory", refusal(error));
  }
  if (!topicId) {
    return { status: "cancelled" };
  }
  const scoped = scopeOf(items, topicId);
  const shown = await call("getMemory", { topicId, ...scoped });
  if (shown.success !== true) {
    return failed(deps, "Edit Memory", shown);
  }
  const latest = shown.latest as JsonObject;
  const fields: JsonObject = {};
  for (const name of EDITABLE) fields[name] = name === "status" && latest.status === "Superseded" ? "Active" : latest[name];
  const edited = await deps.ui.edit(fields);
  if (!edited) {
    return { status: "cancelled" };
  }
  const unknown = Object.keys(edited).filter((name) => !(EDITABLE as readonly string[]).includes(name));
  if (unknown.length) {
    return failed(deps, "Edit Memory", { errorCode: "INVALID_PAYLOAD", error: `unknown fields: ${unknown.join(", ")}` });
  }
  const { status, ...summary } = { ...fields, ...edited };
  const metadata: JsonObject = { topicId, createdAt: latest.createdAt, updatedAt: new Date().toISOString(), status };
  if (latest.planId) metadata.planId = latest.planId;
  const result = await call("ingestForAgent", { ...summary, agentName: EDITOR_NAME, metadata, ...scoped });
  if (result.success !== true) {
    return failed(deps, "Edit Memory", result);
  }
  const version = (result.ingestion_metrics as JsonObject | undefined)?.version;
  deps.ui.info(`Flowbaby: stored version ${String(version)} of "${String(summary.topic)}".`);
  deps.activity(`[Edit Memory] ${new Date().toISOString()} - Topic: ${String(summary.topic)} (${topicId}) - Status: success`);
  return { status: "done", topicId, result };
}

/** Mark Memory Superseded: pick the older memory and the newer one, confirm, then confirmSupersession. */
export async function supersedeMemoryCommand(deps: CorrectDeps, older?: string, newer?: string): Promise<CorrectOutcome> {
  let items: MemoryPick[] | undefined;
  try {
    if (!older) [older, items] = await pickMemory(deps, "Flowbaby: the memory that is no longer current");
    if (older && !newer) [newer] = await pickMemory(deps, `Flowbaby: the memory that supersedes ${older}`, items?.filter((item) => item.topicId !== older));
  } catch (error) {
    return failed(deps, "Supersede Memory", refusal(error));
  }
  if (!older || !newer) {
    return { status: "cancelled" };
  }
  const confirmed = await deps.ui.confirm(
    `Mark "${older}" as superseded by "${newer}"?`,
    `${older} is then hidden from search, recall and the briefing unless asked for; its versions are kept.`,
  );
  if (!confirmed) {
    return { status: "cancelled" };
  }
  const result = await deps.call("confirmSupersession", { olderTopicId: older, newerTopicId: newer, listed: false }).catch(ingestFailure);
  if (result.success !== true) {
    return failed(deps, "Supersede Memory", result);
  }
  deps.ui.info(`Flowbaby: "${older}" is superseded by "${newer}".`);
  deps.activity(`[Supersede Memory] ${new Date().toISOString()} - ${older} superseded by ${newer} - Status: success`);
  return { status: "done", topicId: older, result };
}
