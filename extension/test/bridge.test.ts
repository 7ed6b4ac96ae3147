/** The bridge client and the agent commands against a real `flowbaby bridge` subprocess. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AgentApi, formatRetrieveResult, formatStoreResult } from "../src/core/agentApi";
import * as path from "node:path";
import { BridgeClient, BridgeUnavailableError } from "../src/core/bridgeClient";
import { resolveFlowbabyCommand } from "../src/core/executable";
import { JsonObject } from "../src/core/jsonRpc";
import { RetrievalThrottle } from "../src/core/throttle";
import { validateIngestRequest } from "../src/core/validation";
import { flowbabyCommand, ingestPayload, tempWorkspace, waitFor } from "./helpers";

const ACTIVITY = /^\[Agent Ingest\] \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z - Agent: unit-test agent - Topic: Redis caching decision - Status: success$/;

/** Every faulty field is named, by the bridge and by validateIngestRequest alike. */
async function assertInvalidPayloads(api: AgentApi): Promise<void> {
  const bad: unknown[] = [
    {},
    { topic: " ", context: 3, metadata: { topicId: "x", createdAt: "yesterday", updatedAt: "2025-03-01" } },
    { ...ingestPayload("t"), decisions: ["ok", 2], metadata: { topicId: "t", createdAt: "2025-03-01", updatedAt: "2025-03-01", status: "Done" } },
    { ...ingestPayload("t"), metadata: { topicId: "x".repeat(257), createdAt: "20250301T100000Z", updatedAt: "2025-W09-6" } },
    { ...ingestPayload("t"), rationale: "not a list", agentName: "a".repeat(300) },
    { ...ingestPayload("t"), context: "x".repeat(100_001) },
    { ...ingestPayload("t"), topic: "bad \ud800 text" },
  ];
  for (const payload of bad) {
    const answer = JSON.parse(await api.ingestForAgent(JSON.stringify(payload)));
    const local = validateIngestRequest(payload);
    assert.equal(answer.success, false);
    assert.equal(answer.errorCode, "INVALID_PAYLOAD");
    assert.equal(local.valid, false);
    assert.deepEqual(local.fields, answer.fields, JSON.stringify(payload).slice(0, 200));
    assert.equal(local.errors[0], answer.error);
    assert.deepEqual(answer.details, local.details);
  }
  assert.equal(validateIngestRequest(ingestPayload("fine")).valid, true);
  const notJson = JSON.parse(await api.ingestForAgent("{not json"));
  assert.equal(notJson.errorCode, "INVALID_PAYLOAD");
  const badQuery = JSON.parse(await api.retrieveForAgent(JSON.stringify({ query: "x", maxResults: 0 })));
  assert.equal(badQuery.errorCode, "INVALID_REQUEST");
  assert.equal(badQuery.error, "INVALID_REQUEST");
  assert.deepEqual(badQuery.fields, ["maxResults"]);
}

describe("bridge client and agent commands (real bridge)", { timeout: 240_000 }, () => {
  const workspace = tempWorkspace("fb-ext-", { graph: false });
  const command = flowbabyCommand();
  const bridge = new BridgeClient({ workspace, command, extraArgs: ["--rate-limit-per-minute", "0"], healthTimeoutMs: 60_000 });
  const lines: string[] = [];
  const api = new AgentApi({
    call: (method, params) => bridge.call(method, params),
    throttle: new RetrievalThrottle({ rateLimitPerMinute: 30 }),
    activity: (line) => lines.push(line),
  });

  before(async () => {
    const health = await bridge.start();
    assert.equal(health.status, "ready");
    assert.equal(bridge.state, "ready");
  });
  after(async () => {
    await bridge.stop();
  });

  it("ingests, reports the operation and retrieves the memory (JSON string in and out)", async () => {
    const answer = JSON.parse(await api.ingestForAgent(JSON.stringify(ingestPayload("redis-cache"))));
    assert.equal(answer.success, true, JSON.stringify(answer));
    assert.equal(answer.staged, true);
    assert.match(answer.operationId, /^op_[0-9a-f]{16}$/);
    assert.equal(answer.metadata.topic_id, "redis-cache");
    assert.match(lines.at(-1)!, ACTIVITY);

    const one = JSON.parse(await api.backgroundStatus(answer.operationId));
    assert.equal(one.operationId, answer.operationId);
    assert.ok(["pending", "running", "completed"].includes(one.status), one.status);
    const all = JSON.parse(await api.backgroundStatus());
    assert.ok(all.operations.some((op: JsonObject) => op.operationId === answer.operationId));

    const found = JSON.parse(await api.retrieveForAgent(JSON.stringify({ query: "Redis session cache TTL", maxResults: 3 })));
    assert.equal(found.success, true, JSON.stringify(found));
    assert.equal(found.entries[0].topicId, "redis-cache");
    assert.match(lines.at(-1)!, /^\[Agent Retrieve\] \S+Z - Query: Redis session cache TTL - Results: 1 - Status: success$/);
  });

  it("gives the tools' narrative markdown and structured JSON", async () => {
    const stored = await api.storeMemoryTool({ topic: "Tool note", context: "The CI job retries flaky tests once.", metadata: { plan_id: "p-1" } });
    assert.equal(stored.success, true, JSON.stringify(stored));
    assert.match(formatStoreResult(stored, "Tool note"), /# Memory stored[\s\S]*```json\n\{\n {2}"success": true/);
    assert.match(lines.at(-1)!, /^\[Tool Invocation\] \S+Z - flowbaby_storeMemory called - Topic: Tool note - Status: success$/);

    const result = await api.retrieveMemoryTool({ query: "flaky tests retried in CI" });
    const text = formatRetrieveResult(result);
    assert.match(text, /^# Retrieved Memories \(\d+ results\)/);
    assert.match(text, /## Structured Response \(JSON\)\n\n```json\n/);
    const block = JSON.parse(text.split("```json\n")[1].split("\n```")[0]);
    assert.ok(block.entries.some((entry: JsonObject) => entry.topic === "Tool note"));
    assert.deepEqual(Object.keys(block), ["entries", "totalResults", "tokensUsed"]);
    assert.match(lines.at(-1)!, /^\[Tool Invocation\] \S+Z - flowbaby_retrieveMemory called - Query: flaky tests retried in CI - Status: success$/);
  });

  it("answers INVALID_PAYLOAD with every faulty field, matching validateIngestRequest", () => assertInvalidPayloads(api));

  it("answers 429_AGENT_THROTTLED from the extension's throttle before the bridge", async () => {
    const limited = new AgentApi({
      call: (method, params) => bridge.call(method, params),
      throttle: new RetrievalThrottle({ rateLimitPerMinute: 2 }),
      activity: () => undefined,
    });
    const request = JSON.stringify({ query: "Redis" });
    for (let i = 0; i < 2; i++) {
      assert.equal(JSON.parse(await limited.retrieveForAgent(request)).success, true);
    }
    const refused = JSON.parse(await limited.retrieveForAgent(request));
    assert.equal(refused.errorCode, "RATE_LIMIT_EXCEEDED");
    assert.equal(refused.error, "RATE_LIMIT_EXCEEDED");
    assert.match(refused.message, /^429_AGENT_THROTTLED: at most 2 retrievals per minute; retry in \d+s$/);
    assert.ok(refused.retryAfterSec >= 1 && refused.retryAfterSec <= 61);
  });

  it("a second client on the same workspace works through the owner", async () => {
    const second = new BridgeClient({ workspace, command, healthTimeoutMs: 60_000 });
    try {
      const health = await second.start();
      assert.equal(health.pid, (await bridge.call("health")).pid, "answered by the owning bridge");
      assert.notEqual(second.pid, bridge.pid);
      const status = await second.call("backgroundStatus", {});
      assert.equal(status.success, true);
    } finally {
      await second.stop();
    }
  });
});

describe("bridge lifecycle (real bridge)", { timeout: 240_000 }, () => {
  const command = flowbabyCommand();

  it("restarts with backoff after a crash and serves again", async () => {
    const bridge = new BridgeClient({ workspace: tempWorkspace(), command, initialBackoffMs: 200, healthTimeoutMs: 60_000 });
    try {
      await bridge.start();
      const first = bridge.pid!;
      const crashed = waitFor(bridge, "crashed", 10_000);
      const ready = waitFor<JsonObject>(bridge, "ready", 90_000);
      process.kill(first, "SIGKILL");
      await crashed;
      // A call during the backoff waits for the restarted bridge instead of failing.
      const during = await bridge.call("health");
      const [health] = await ready;
      assert.equal(during.pid, health.pid);
      assert.notEqual(health.pid, first);
      assert.equal((await bridge.call("health")).status, "ready");
    } finally {
      await bridge.stop();
    }
  });

  it("starts through flowbaby.pythonPath and stops cleanly: shutdown, exit code 0", async () => {
    const python = path.join(path.dirname(command.file), "python");
    const viaPython = resolveFlowbabyCommand({ pythonPath: python })!;
    const bridge = new BridgeClient({ workspace: tempWorkspace(), command: viaPython, healthTimeoutMs: 60_000 });
    await bridge.start();
    const pid = bridge.pid!;
    await bridge.stop();
    assert.equal(bridge.state, "stopped");
    assert.equal(bridge.exitCode, 0);
    assert.throws(() => process.kill(pid, 0));
  });

  it("surfaces bridgeUnavailable (bad workspace) without restarting", async () => {
    const bridge = new BridgeClient({ workspace: "/nonexistent/flowbaby-ws", command, initialBackoffMs: 50, healthTimeoutMs: 60_000 });
    const unavailable = waitFor<BridgeUnavailableError>(bridge, "unavailable", 60_000);
    await assert.rejects(bridge.start(), (error: BridgeUnavailableError) => error.errorCode === "INVALID_WORKSPACE_PATH");
    const [error] = await unavailable;
    assert.match(error.message, /does not exist or is not a directory/);
    assert.equal(bridge.state, "unavailable");
    await assert.rejects(bridge.call("health"), (e: BridgeUnavailableError) => e.errorCode === "INVALID_WORKSPACE_PATH");
  });

  it("gives up after a health deadline is missed repeatedly", async () => {
    const silent = { file: process.execPath, prefix: ["-e", "setInterval(() => {}, 1000)"], source: "setting" as const };
    const bridge = new BridgeClient({ workspace: tempWorkspace(), command: silent, healthTimeoutMs: 300, initialBackoffMs: 50, maxFailures: 2 });
    const unavailable = waitFor<BridgeUnavailableError>(bridge, "unavailable", 10_000);
    await assert.rejects(bridge.start(), (error: BridgeUnavailableError) => error.errorCode === "BRIDGE_TIMEOUT");
    const [error] = await unavailable;
    assert.equal(error.errorCode, "BRIDGE_TIMEOUT");
    await bridge.stop();
  });
});
