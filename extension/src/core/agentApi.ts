/**
 * The three agent commands and the two tools, as plain functions over a bridge call:
 * JSON string in, JSON string out, with the docs' response and error shapes.
 */
import { BridgeUnavailableError } from "./bridgeClient";
import { JsonObject, RpcTimeoutError } from "./jsonRpc";
import { RetrievalThrottle, isThrottleRefusal } from "./throttle";
import { validateIngestRequest } from "./validation";

export type BridgeCall = (method: string, params?: JsonObject) => Promise<JsonObject>;

export const STORE_TOOL = "flowbaby_storeMemory";
export const RETRIEVE_TOOL = "flowbaby_retrieveMemory";
export const TOOL_AGENT_NAME = "VS Code language model tool";

/** `2025-11-19T08:12:44Z`, the docs' timestamp form. */
export function isoSeconds(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function oneLine(text: unknown, max = 120): string {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function status(result: JsonObject): string {
  return result.success === true ? "success" : `error (${String(result.errorCode ?? "UNKNOWN")})`;
}

export function ingestLine(agentName: unknown, topic: unknown, result: JsonObject, at = new Date()): string {
  const agent = typeof agentName === "string" && agentName.trim() ? oneLine(agentName) : "unknown";
  return `[Agent Ingest] ${isoSeconds(at)} - Agent: ${agent} - Topic: ${oneLine(topic) || "(none)"} - Status: ${status(result)}`;
}

export function retrieveLine(query: unknown, result: JsonObject, at = new Date()): string {
  const count = result.success === true ? ` - Results: ${String(result.totalResults)}` : "";
  return `[Agent Retrieve] ${isoSeconds(at)} - Query: ${oneLine(query) || "(none)"}${count} - Status: ${status(result)}`;
}

export function toolLine(tool: string, subject: string, result: JsonObject, at = new Date()): string {
  return `[Tool Invocation] ${isoSeconds(at)} - ${tool} called - ${subject} - Status: ${status(result)}`;
}

export interface AgentApiDeps {
  call: BridgeCall;
  throttle: RetrievalThrottle;
  /** One line to the "Flowbaby Agent Activity" channel. */
  activity: (line: string) => void;
}

function parseJson(input: unknown): { value?: unknown; problem?: string } {
  if (typeof input !== "string") {
    return input !== null && typeof input === "object" ? { value: input } : { problem: "The request must be a JSON string" };
  }
  try {
    return { value: JSON.parse(input) };
  } catch (error) {
    return { problem: `The request is not valid JSON: ${(error as Error).message}` };
  }
}

/** A failed bridge call in the ingest shape (INGEST_CONTRACT.md 5.1). */
export function ingestFailure(error: unknown): JsonObject {
  if (error instanceof BridgeUnavailableError) {
    return { success: false, error: error.message, errorCode: error.errorCode };
  }
  if (error instanceof RpcTimeoutError) {
    return { success: false, error: error.message, errorCode: "BRIDGE_TIMEOUT" };
  }
  return { success: false, error: `Flowbaby bridge call failed: ${(error as Error).message ?? String(error)}`, errorCode: "FLOWBABY_ERROR" };
}

/** A failed bridge call in the retrieval shape (5.2). */
export function retrievalFailure(error: unknown): JsonObject {
  const failure = ingestFailure(error);
  return { success: false, error: failure.errorCode, errorCode: failure.errorCode, message: failure.error };
}

export class AgentApi {
  constructor(private readonly deps: AgentApiDeps) {}

  /** `Flowbaby.ingestForAgent(requestJson)`. */
  async ingestForAgent(requestJson: unknown): Promise<string> {
    const parsed = parseJson(requestJson);
    let result: JsonObject;
    let payload: Record<string, unknown> = {};
    if (parsed.problem) {
      result = { success: false, error: parsed.problem, errorCode: "INVALID_PAYLOAD", fields: ["payload"] };
    } else if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
      result = { success: false, error: 'Field "params" must be an object', errorCode: "INVALID_PAYLOAD", fields: ["params"] };
    } else {
      payload = parsed.value as Record<string, unknown>;
      result = await this.deps.call("ingestForAgent", payload as JsonObject).catch(ingestFailure);
      if (result.errorCode === "INVALID_PAYLOAD") {
        const local = validateIngestRequest(payload);
        result.details = local.details.map((detail) => ({ ...detail }));
      }
    }
    this.deps.activity(ingestLine(payload.agentName, payload.topic, result));
    return JSON.stringify(result);
  }

  /** `Flowbaby.retrieveForAgent(requestJson)`: throttled, then the bridge's retrieveForAgent. */
  async retrieveForAgent(requestJson: unknown): Promise<string> {
    const parsed = parseJson(requestJson);
    let result: JsonObject;
    let query: unknown;
    if (parsed.problem || typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
      const message = parsed.problem ?? 'Field "params" must be an object';
      result = { success: false, error: "INVALID_REQUEST", errorCode: "INVALID_REQUEST", message, fields: ["params"] };
    } else {
      const request = parsed.value as JsonObject;
      query = request.query;
      result = await this.throttled("retrieveForAgent", request);
    }
    this.deps.activity(retrieveLine(query, result));
    return JSON.stringify(result);
  }

  /** `Flowbaby.backgroundStatus(operationId?)`. */
  async backgroundStatus(operationId?: unknown): Promise<string> {
    const params: JsonObject = operationId === undefined || operationId === null ? {} : { operationId: operationId as string };
    const result = await this.deps.call("backgroundStatus", params).catch(ingestFailure);
    return JSON.stringify(result);
  }

  /** The store tool: storeMemory with metadata filled in by the bridge. */
  async storeMemoryTool(input: Record<string, unknown>): Promise<JsonObject> {
    const metadata = (input.metadata ?? undefined) as Record<string, unknown> | undefined;
    const params: JsonObject = { ...(input as JsonObject), agentName: TOOL_AGENT_NAME };
    if (metadata && typeof metadata === "object") {
      const { plan_id, ...rest } = metadata;
      params.metadata = { ...(rest as JsonObject), ...(plan_id !== undefined ? { planId: plan_id as string } : {}) };
    }
    const result = await this.deps.call("storeMemory", params).catch(ingestFailure);
    this.deps.activity(toolLine(STORE_TOOL, `Topic: ${oneLine(input.topic)}`, result));
    return result;
  }

  /** The retrieve tool: retrieveMemory (markdown + entries), throttled like the command. */
  async retrieveMemoryTool(input: Record<string, unknown>): Promise<JsonObject> {
    const params: JsonObject = { query: input.query as string, maxResults: (input.maxResults ?? 3) as number };
    const result = await this.throttled("retrieveMemory", params);
    this.deps.activity(toolLine(RETRIEVE_TOOL, `Query: ${oneLine(input.query)}`, result));
    return result;
  }

  private async throttled(method: string, params: JsonObject): Promise<JsonObject> {
    const outcome = await this.deps.throttle.run(() => this.deps.call(method, params).catch(retrievalFailure));
    return isThrottleRefusal(outcome) ? { ...outcome } : outcome;
  }
}

/** The entry fields the docs' structured block shows. */
function docEntry(entry: JsonObject): JsonObject {
  const picked: JsonObject = {};
  for (const key of ["summaryText", "topic", "topicId", "planId", "createdAt", "score", "decisions"]) {
    if (entry[key] !== undefined && entry[key] !== null) {
      picked[key] = entry[key];
    }
  }
  return picked;
}

function jsonBlock(value: unknown): string {
  return `## Structured Response (JSON)\n\n\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\`\n`;
}

/** Narrative markdown, then the structured JSON, as the retrieve tool returns them. */
export function formatRetrieveResult(result: JsonObject): string {
  if (result.success !== true) {
    const advice = isThrottleRefusal(result)
      ? `\n\n429_AGENT_THROTTLED: wait ${String(result.retryAfterSec)}s, then retry with exponential backoff (up to about 15s); tell the user why you paused.`
      : "";
    return `# Flowbaby retrieval failed\n\n${String(result.errorCode)}: ${String(result.message ?? result.error)}${advice}\n\n---\n\n${jsonBlock(result)}`;
  }
  const entries = ((result.entries as JsonObject[]) ?? []).map(docEntry);
  const narrative = typeof result.markdown === "string" ? result.markdown : `# Retrieved Memories (${entries.length} results)\n`;
  return `${narrative.trimEnd()}\n\n---\n\n${jsonBlock({ entries, totalResults: result.totalResults, tokensUsed: result.tokensUsed })}`;
}

export function formatStoreResult(result: JsonObject, topic: unknown): string {
  if (result.success !== true) {
    return `# Flowbaby store failed\n\n${String(result.errorCode)}: ${String(result.error)}\n\n---\n\n${jsonBlock(result)}`;
  }
  const narrative =
    `# Memory stored\n\n**Topic:** ${oneLine(topic, 200)}\n\n` +
    `Stored as \`${String(result.summary_id)}\` (${String(result.ingested_chars)} characters). ` +
    `It is searchable now; its knowledge graph is built in the background (operation \`${String(result.operationId)}\`). ` +
    `Send \`${String(result.summary_id)}\` as metadata.topicId to update this memory.`;
  return `${narrative}\n\n---\n\n${jsonBlock(result)}`;
}
