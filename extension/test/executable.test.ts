/** Where the extension finds flowbaby: the setting, then the workspace .venv, then PATH. */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { resolveFlowbabyCommand } from "../src/core/executable";
import { tempWorkspace } from "./helpers";

function executable(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "#!/bin/sh\n", { mode: 0o755 });
  return file;
}

describe("resolveFlowbabyCommand", () => {
  const workspace = tempWorkspace();
  const onPath = executable(path.join(tempWorkspace(), "flowbaby"));
  const searchPath = path.dirname(onPath);

  it("takes PATH when nothing else is there", () => {
    assert.deepEqual(resolveFlowbabyCommand({}, workspace, searchPath), { file: onPath, prefix: [], source: "PATH" });
    assert.equal(resolveFlowbabyCommand({}, workspace, "/nonexistent"), undefined);
  });

  it("prefers the workspace .venv over PATH", () => {
    const venv = executable(path.join(workspace, ".venv", "bin", "flowbaby"));
    assert.deepEqual(resolveFlowbabyCommand({}, workspace, searchPath), { file: venv, prefix: [], source: "workspace .venv" });
  });

  it("prefers the settings over both", () => {
    assert.equal(resolveFlowbabyCommand({ command: " /opt/fb " }, workspace, searchPath)?.file, "/opt/fb");
    const python = resolveFlowbabyCommand({ pythonPath: "/usr/bin/python3" }, workspace, searchPath)!;
    assert.equal(python.source, "pythonPath");
    // -P: the bridge runs in the workspace folder, which must not come first on sys.path
    assert.deepEqual(python.prefix.slice(0, 2), ["-P", "-c"]);
    assert.match(python.prefix[2], /from bridge\.cli import main/);
  });
});
