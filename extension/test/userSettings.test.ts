/** The settings that choose the executable, the team server and the token file come from the user only. */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { Inspectable, USER_ONLY_SETTINGS, userValue } from "../src/core/userSettings";

function config(values: Record<string, { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown }>): Inspectable {
  return { inspect: <T>(key: string) => values[key] as { globalValue?: T } | undefined };
}

describe("userValue", () => {
  it("ignores what a workspace or folder sets", () => {
    const repo = { workspaceValue: "/repo/evil", workspaceFolderValue: "/repo/evil2" };
    const settings = config({
      command: repo,
      serverTokenFile: { ...repo, globalValue: "~/.config/flowbaby/team.token" },
      serverUrl: { globalValue: 42 },
    });
    assert.equal(userValue(settings, "command"), "");
    assert.equal(userValue(settings, "serverTokenFile"), "~/.config/flowbaby/team.token");
    assert.equal(userValue(settings, "serverUrl"), "");
    assert.equal(userValue(settings, "pythonPath"), "");
  });

  it("matches the machine scope package.json declares", () => {
    // out/test/ after tsc: the manifest is two folders up.
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
    const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
    for (const key of USER_ONLY_SETTINGS) {
      assert.equal(properties[`flowbaby.${key}`]?.scope, "machine", key);
    }
    const overridable = Object.entries(properties).filter(([, p]) => p.scope === "machine-overridable").map(([k]) => k);
    assert.deepEqual(overridable, []);
  });
});
