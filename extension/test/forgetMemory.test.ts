/** "Flowbaby: Forget Memory" against a real `flowbaby bridge`, with the dialogs scripted. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { forgetMemoryCommand } from "../src/core/forgetMemory";
import { pickItems } from "../src/core/memoryCommand";
import { JsonObject } from "../src/core/jsonRpc";
import { bridgeWithMemories, ingestPayload, scriptedDialogs } from "./helpers";

describe("Forget Memory command (real bridge)", { timeout: 240_000 }, () => {
  const call = bridgeWithMemories("fb-forget-", [
    ["old-note", "An older note"],
    ["redis-cache", "Redis caching decision"],
  ]);
  const lines: string[] = [];
  const activity = (line: string) => lines.push(line);

  it("cancelling the confirmation forgets nothing", async () => {
    const { ui, seen } = scriptedDialogs({ pick: (items) => items.find((item) => item.topicId === "redis-cache")?.topicId, confirm: false });
    const outcome = await forgetMemoryCommand({ call, ui, activity });
    assert.deepEqual(outcome, { status: "cancelled", topicId: "redis-cache" });

    // The pick list: newest first, topic, topicId, status and update date.
    assert.deepEqual(
      seen.picks[0].map((item) => [item.label, item.description, item.detail]),
      [
        ["Redis caching decision", "redis-cache", "Active · updated 2025-03-01"],
        ["An older note", "old-note", "Active · updated 2025-03-01"],
      ],
    );
    // The dry run's count is in the warning.
    assert.equal(seen.confirms.length, 1);
    assert.equal(seen.confirms[0][0], 'Forget "Redis caching decision"? This removes it from every store and cannot be undone.');
    assert.match(seen.confirms[0][1], /^redis-cache: 1 version will be deleted/);
    assert.deepEqual([seen.infos, seen.errors], [[], []]);
    assert.match(lines.at(-1)!, /^\[Forget Memory\] \S+Z - Topic: Redis caching decision \(redis-cache\) - Versions: 1 - Status: cancelled$/);

    const still = await call("getMemory", { topicId: "redis-cache" });
    assert.equal(still.success, true, JSON.stringify(still));
    assert.equal((still.versions as JsonObject[]).length, 1);
  });

  it("confirming forgets the memory from the bridge", async () => {
    const { ui, seen } = scriptedDialogs({ pick: (items) => items[0]?.topicId, confirm: true });
    const outcome = await forgetMemoryCommand({ call, ui, activity });
    assert.equal(outcome.status, "forgotten", JSON.stringify(outcome));
    assert.equal(outcome.topicId, "redis-cache");
    assert.deepEqual(seen.errors, []);
    assert.match(seen.infos[0], /^Flowbaby: forgot "Redis caching decision" \(1 version\)\./);
    assert.match(lines.at(-1)!, /^\[Forget Memory\] \S+Z - Topic: Redis caching decision \(redis-cache\) - Versions: 1 - Status: success$/);

    const gone = await call("getMemory", { topicId: "redis-cache" });
    assert.equal(gone.success, false);
    assert.equal(gone.errorCode, "NOT_FOUND");
    const other = await call("getMemory", { topicId: "old-note" });
    assert.equal(other.success, true, JSON.stringify(other));
    const listed = await call("listMemories", {});
    assert.deepEqual((listed.memories as JsonObject[]).map((memory) => memory.topicId), ["old-note"]);
  });

  it("a typed unknown topicId fails with NOT_FOUND before any confirmation", async () => {
    const { ui, seen } = scriptedDialogs({ pick: () => "no-such-topic", confirm: true });
    const outcome = await forgetMemoryCommand({ call, ui, activity });
    assert.equal(outcome.status, "failed");
    assert.deepEqual(seen.confirms, []);
    assert.equal(seen.errors.length, 1);
    assert.match(seen.errors[0], /NOT_FOUND/);
    assert.match(lines.at(-1)!, /- Topic: no-such-topic \(no-such-topic\) - Status: error \(NOT_FOUND\)$/);
    assert.equal((await call("getMemory", { topicId: "old-note" })).success, true);
  });

  it("the person's own memory is marked in the pick and forgotten from their user store", () => forgetsTheUsers(call, activity));

  it("dismissing the pick calls nothing else", async () => {
    const linesBefore = lines.length;
    const { ui, seen } = scriptedDialogs({ pick: () => undefined, confirm: true });
    assert.deepEqual(await forgetMemoryCommand({ call, ui, activity }), { status: "cancelled" });
    assert.deepEqual([seen.confirms, seen.infos, seen.errors, lines.length], [[], [], [], linesBefore]);
  });
});

/** A memory stored with `scope: "user"` (docs/contract/21-user-scope.md): marked in the pick (the project's
 * unchanged), its dry run and forget sent to the user store, the project's memory left. */
async function forgetsTheUsers(call: (method: string, params?: JsonObject) => Promise<JsonObject>, activity: (line: string) => void) {
  const stored = await call("ingestForAgent", { ...ingestPayload("my-package-manager"), topic: "I always use uv, never pip", scope: "user" });
  assert.equal(stored.success, true, JSON.stringify(stored));
  const { ui, seen } = scriptedDialogs({ pick: (items) => items.find((item) => item.scope === "user")?.topicId, confirm: true });
  const outcome = await forgetMemoryCommand({ call, ui, activity });
  assert.equal(outcome.status, "forgotten", JSON.stringify(outcome));
  assert.deepEqual(
    seen.picks[0].map((item) => [item.description, item.scope]),
    [
      ["my-package-manager · yours (every project)", "user"],
      ["old-note", "project"],
    ],
  );
  assert.match(seen.confirms[0][1], /^my-package-manager: 1 version will be deleted/);
  assert.deepEqual((await call("listMemories", { scope: "user" })).memories, []);
  assert.equal((await call("getMemory", { topicId: "old-note" })).success, true);
}

it("a server whose memories carry no scope gives project picks", () => {
  const [pick] = pickItems([{ topicId: "t1", topic: "A note", status: "Active", updatedAt: "2025-03-01T00:00:00Z" }]);
  assert.deepEqual([pick.scope, pick.description], ["project", "t1"]);
});
