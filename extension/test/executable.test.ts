/**
 * Where the extension finds flowbaby: the settings, then the workspace's own .venv (trusted and
 * confirmed once), then PATH. A cloned repository's `.venv/bin/flowbaby` is a program the repository
 * chose: it must never run unasked (INGEST_CONTRACT.md 15.14).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { BridgeClient } from "../src/core/bridgeClient";
import {
  WorkspaceExecutablePolicy,
  chooseFlowbabyCommand,
  findOnPath,
  resolveFlowbabyCommand,
} from "../src/core/executable";
import { flowbabyCommand, tempWorkspace } from "./helpers";

function executable(file: string, body = "#!/bin/sh\n"): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, body, { mode: 0o755 });
  return file;
}

/** A repository that commits `.venv/bin/flowbaby`: run, it leaves `pwned` next to itself. */
function clonedRepository(): { workspace: string; planted: string; marker: string } {
  const workspace = tempWorkspace("fb-cloned-");
  const marker = path.join(workspace, "pwned");
  const planted = executable(path.join(workspace, ".venv", "bin", "flowbaby"), `#!/bin/sh\ntouch '${marker}'\n`);
  return { workspace, planted, marker };
}

/** A policy like the extension's, with the user's answer given and every question recorded. */
function policy(trusted: boolean, answer: boolean, approved: string[] = []): WorkspaceExecutablePolicy & { asked: string[] } {
  const asked: string[] = [];
  return {
    trusted,
    approved,
    asked,
    ask: async (file) => {
      asked.push(file);
      return answer;
    },
    remember: async (print) => {
      approved.push(print);
    },
  };
}

describe("choosing the flowbaby executable", { timeout: 120_000 }, () => {
  const onPath = executable(path.join(tempWorkspace(), "flowbaby"));
  const searchPath = path.dirname(onPath);

  it("takes PATH when nothing else is there, and only PATH's absolute folders", () => {
    assert.deepEqual(resolveFlowbabyCommand({}, searchPath), { file: onPath, prefix: [], source: "PATH" });
    assert.equal(resolveFlowbabyCommand({}, "/nonexistent"), undefined);
    // A relative entry (`.`, `node_modules/.bin`) would name a folder of the workspace the bridge runs in.
    const relative = path.relative(process.cwd(), searchPath);
    assert.ok(!path.isAbsolute(relative) && relative.length > 0);
    assert.equal(findOnPath("flowbaby", relative), undefined);
  });

  it("takes the user's settings first, without asking", async () => {
    const { workspace, marker } = clonedRepository();
    const asking = policy(true, true);
    const chosen = await chooseFlowbabyCommand({ command: " /opt/fb " }, workspace, asking, searchPath);
    assert.equal(chosen.command?.file, "/opt/fb");
    const python = (await chooseFlowbabyCommand({ pythonPath: "/usr/bin/python3" }, workspace, asking, searchPath)).command!;
    assert.equal(python.source, "pythonPath");
    // -P: the bridge runs in the workspace folder, which must not come first on sys.path
    assert.deepEqual(python.prefix.slice(0, 2), ["-P", "-c"]);
    assert.match(python.prefix[2], /from flowbaby\.cli import main/);
    assert.deepEqual(asking.asked, []);
    assert.ok(!fs.existsSync(marker));
  });

  it("never runs a cloned repository's .venv/bin/flowbaby unasked: a real bridge starts from PATH", async () => {
    const { workspace, planted, marker } = clonedRepository();
    const real = flowbabyCommand();
    assert.equal(path.basename(real.file), "flowbaby");
    const declining = policy(true, false);
    const chosen = await chooseFlowbabyCommand({}, workspace, declining, path.dirname(real.file));
    assert.deepEqual(declining.asked, [planted]); // the user was asked, and said no
    assert.equal(chosen.command?.source, "PATH");
    assert.equal(chosen.command?.file, real.file);
    assert.match(chosen.skipped ?? "", /not confirmed/);

    const bridge = new BridgeClient({ workspace, command: chosen.command, healthTimeoutMs: 60_000 });
    try {
      assert.equal((await bridge.start()).status, "ready");
    } finally {
      await bridge.stop();
    }
    assert.ok(!fs.existsSync(marker), "the repository's program ran");
  });

  it("never asks, nor runs it, in a workspace VS Code does not trust", async () => {
    const { workspace, marker } = clonedRepository();
    const untrusted = policy(false, true);
    const chosen = await chooseFlowbabyCommand({}, workspace, untrusted, searchPath);
    assert.deepEqual(untrusted.asked, []);
    assert.deepEqual(chosen.command, { file: onPath, prefix: [], source: "PATH" });
    assert.match(chosen.skipped ?? "", /not trusted/);
    assert.ok(!fs.existsSync(marker));
  });

  it("runs it once confirmed, remembers that file's bytes, and asks again when they change", async () => {
    const { workspace, planted } = clonedRepository();
    const approved: string[] = [];
    const yes = policy(true, true, approved);
    assert.deepEqual((await chooseFlowbabyCommand({}, workspace, yes, searchPath)).command, {
      file: planted,
      prefix: [],
      source: "workspace .venv",
    });
    assert.equal(approved.length, 1);

    const again = policy(true, false, approved);
    assert.equal((await chooseFlowbabyCommand({}, workspace, again, searchPath)).command?.file, planted);
    assert.deepEqual(again.asked, []); // remembered

    fs.appendFileSync(planted, "echo changed\n"); // a `git pull` brought another program
    const changed = policy(true, false, approved);
    assert.equal((await chooseFlowbabyCommand({}, workspace, changed, searchPath)).command?.source, "PATH");
    assert.deepEqual(changed.asked, [planted]);

    // The same bytes in another clone are another file: asked again.
    const other = clonedRepository();
    fs.copyFileSync(planted, other.planted);
    const elsewhere = policy(true, false, approved);
    await chooseFlowbabyCommand({}, other.workspace, elsewhere, searchPath);
    assert.deepEqual(elsewhere.asked, [other.planted]);
  });
});
