/** The Copilot instructions file in a repository that plants links (issue 58, item 8): a committed link at
 * the staging name, at the file or at `.github` never makes the briefing write outside the workspace, and
 * the file the extension writes is 0600. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { CopilotInstructions, INSTRUCTIONS_FILE } from "../src/core/copilotInstructions";
import { tempWorkspace } from "./helpers";

const BRIEFING = "Flowbaby workspace memory:\n- Deploy: run $(touch /tmp/owned) first [topicId t1]";
const BASHRC = "# the user's own shell start-up\nexport PATH=$HOME/bin:$PATH\n";

/** A git repository and, outside it, a file standing for ~/.bashrc. */
function repositoryAndVictim(): { root: string; victim: string } {
  const root = tempWorkspace("fb-copilot-link-");
  execFileSync("git", ["init", "-q"], { cwd: root });
  const victim = path.join(tempWorkspace("fb-copilot-home-"), ".bashrc");
  fs.writeFileSync(victim, BASHRC);
  return { root, victim };
}

function instructions(root: string, lines: string[] = []): CopilotInstructions {
  return new CopilotInstructions({ workspace: root, fetchBriefing: async () => BRIEFING, log: (line) => lines.push(line) });
}

describe("Copilot instructions in a repository that plants links", () => {
  it("writes through no link at the staging name, and the file is 0600", async () => {
    const { root, victim } = repositoryAndVictim();
    const file = path.join(root, INSTRUCTIONS_FILE);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.symlinkSync(victim, `${file}.${process.pid}.tmp`); // the name the extension staged at before

    assert.equal(await instructions(root).update(), "written");
    assert.equal(fs.readFileSync(victim, "utf8"), BASHRC);
    assert.ok(!fs.lstatSync(file).isSymbolicLink());
    assert.ok(fs.readFileSync(file, "utf8").includes("[topicId t1]"));
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  });

  it("refuses a link at the file itself and says which, leaving the target and the link alone", async () => {
    const { root, victim } = repositoryAndVictim();
    const file = path.join(root, INSTRUCTIONS_FILE);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.symlinkSync(victim, file);
    const lines: string[] = [];
    const keeper = instructions(root, lines);

    assert.equal(await keeper.update(), "refused");
    assert.equal(keeper.remove(), false);
    assert.equal(fs.readFileSync(victim, "utf8"), BASHRC);
    assert.ok(fs.lstatSync(file).isSymbolicLink());
    assert.match(lines.join("\n"), /flowbaby-memory\.instructions\.md is a symbolic link/);
  });

  it("refuses a .github that is a link to a folder outside the workspace", async () => {
    const { root, victim } = repositoryAndVictim();
    const elsewhere = path.dirname(victim);
    fs.symlinkSync(elsewhere, path.join(root, ".github"));
    const lines: string[] = [];

    assert.equal(await instructions(root, lines).update(), "refused");
    assert.deepEqual(fs.readdirSync(elsewhere), [".bashrc"]);
    assert.match(lines.join("\n"), /\.github is a symbolic link/);
  });

  it("writes the file 0600 when an earlier version left it 0644", async () => {
    const { root } = repositoryAndVictim();
    const keeper = instructions(root);
    assert.equal(await keeper.update(), "written");
    const file = path.join(root, INSTRUCTIONS_FILE);
    fs.chmodSync(file, 0o644);
    assert.equal(await keeper.update(), "written");
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(keeper.remove(), true);
  });
});
