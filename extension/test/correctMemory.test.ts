/** "Flowbaby: Edit Memory" and "Flowbaby: Mark Memory Superseded" (issue 50) against a real `flowbaby bridge`,
 * with the dialogs scripted: an edit is a new version, a supersession retires the older memory. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CorrectUi, editMemoryCommand, supersedeMemoryCommand } from "../src/core/correctMemory";
import { JsonObject } from "../src/core/jsonRpc";
import { bridgeWithMemories, scriptedDialogs } from "./helpers";

/** The shared scripted dialogs, the picks answered in turn, plus the field editor. */
function scriptedUi(picks: string[], edit: (fields: JsonObject) => JsonObject | undefined, confirm = true) {
  const { ui, seen } = scriptedDialogs({ pick: () => picks.shift(), confirm });
  const edits: JsonObject[] = [];
  const correct: CorrectUi = {
    ...ui,
    edit: async (fields) => {
      edits.push(fields);
      return edit(fields);
    },
  };
  return { ui: correct, seen: { ...seen, edits } };
}

describe("Edit Memory and Mark Memory Superseded (real bridge)", { timeout: 240_000 }, () => {
  const call = bridgeWithMemories("fb-correct-", [
    ["cache-ttl", "Session cache TTL"],
    ["cache-old", "Session cache in Memcached"],
  ]);
  const activity = (_line: string) => undefined;

  it("Edit Memory stores the edited fields as a new version of the picked memory", async () => {
    const { ui, seen } = scriptedUi(["cache-ttl"], (fields) => ({ ...fields, decisions: ["Use Redis with a 30 minute TTL"] }));
    const outcome = await editMemoryCommand({ call, ui, activity });
    assert.equal(outcome.status, "done", JSON.stringify(outcome));
    assert.deepEqual(seen.edits[0].decisions, ["Use Redis with a 15 minute TTL"]); // the newest version's, to edit
    const shown = await call("getMemory", { topicId: "cache-ttl" });
    const versions = shown.versions as JsonObject[];
    assert.deepEqual(versions.map((v) => v.status), ["Superseded", "Active"]);
    const latest = shown.latest as JsonObject;
    assert.deepEqual(latest.decisions, ["Use Redis with a 30 minute TTL"]);
    assert.equal(latest.agentName, "person");
    assert.equal(latest.planId, "plan-015");
    assert.match(seen.infos[0], /stored version 2/);
  });

  it("a cancelled edit stores nothing, and an unknown field is refused", async () => {
    assert.equal((await editMemoryCommand({ call, ui: scriptedUi([], () => undefined).ui, activity }, "cache-ttl")).status, "cancelled");
    const { ui, seen } = scriptedUi([], (fields) => ({ ...fields, colour: "blue" }));
    assert.equal((await editMemoryCommand({ call, ui, activity }, "cache-ttl")).status, "failed");
    assert.match(seen.errors[0], /INVALID_PAYLOAD: unknown fields: colour/);
    assert.equal(((await call("getMemory", { topicId: "cache-ttl" })).versions as JsonObject[]).length, 2);
  });

  it("Mark Memory Superseded retires the older picked memory, no suggestion needed", async () => {
    const declined = scriptedUi(["cache-old", "cache-ttl"], () => undefined, false);
    assert.equal((await supersedeMemoryCommand({ call, ui: declined.ui, activity })).status, "cancelled");
    assert.equal(((await call("getMemory", { topicId: "cache-old" })).latest as JsonObject).status, "Active");

    const { ui, seen } = scriptedUi(["cache-old", "cache-ttl"], () => undefined);
    const outcome = await supersedeMemoryCommand({ call, ui, activity });
    assert.equal(outcome.status, "done", JSON.stringify(outcome));
    assert.ok(!seen.picks[1].some((item) => item.topicId === "cache-old"), "the newer pick leaves the older out");
    assert.equal(((await call("getMemory", { topicId: "cache-old" })).latest as JsonObject).status, "Superseded");
    const missing = scriptedUi([], () => undefined);
    assert.equal((await supersedeMemoryCommand({ call, ui: missing.ui, activity }, "no-such-topic", "cache-ttl")).status, "failed");
    assert.match(missing.seen.errors[0], /NOT_FOUND/);
  });
});
