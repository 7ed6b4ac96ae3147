/** The status bar's view of health.hookProblems. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hookProblemView } from "../src/core/hookProblems";

const problem = { at: "2026-12-04T11:46:32.138Z", event: "UserPromptSubmit", client: "claude-code", reason: "nothing injected: no owner endpoint" };

describe("hookProblemView", () => {
  it("warns while a problem is current and names it in the tooltip", () => {
    const view = hookProblemView({ hookProblems: { current: true, problems: [problem] } });
    assert.equal(view.warning, true);
    assert.equal(view.label, " · hook problem");
    assert.match(view.lines.join("\n"), /UserPromptSubmit \(claude-code\): nothing injected: no owner endpoint/);
  });

  it("keeps past problems in the tooltip without a warning once hooks answered", () => {
    const view = hookProblemView({ hookProblems: { current: false, problems: [problem] } });
    assert.equal(view.warning, false);
    assert.equal(view.label, "");
    assert.match(view.lines[0], /answered since/);
  });

  it("says nothing without problems, or from an older bridge without the field", () => {
    assert.deepEqual(hookProblemView({ hookProblems: { current: false, problems: [] } }).lines, []);
    assert.equal(hookProblemView({}).warning, false);
  });
});
