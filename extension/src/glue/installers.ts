/** "Install for Claude Code / OpenCode": `flowbaby install --client …` on the workspace, reported in a toast. */
import * as vscode from "vscode";
import { Runtime, runFlowbaby } from "./runtime";

export type Client = "claude-code" | "opencode";

export function clientInstaller(runtime: Runtime): (client: Client, label: string) => Promise<void> {
  return async (client, label) => {
    const { workspace, command, logs, showUnavailable } = runtime;
    if (!workspace || !command) {
      showUnavailable("no workspace folder or flowbaby executable");
      return;
    }
    const result = await runFlowbaby(command, ["install", "--client", client, "--workspace", workspace], workspace);
    logs.info(`flowbaby install --client ${client}: exit ${result.code}\n${result.out}`);
    if (result.code === 0) {
      void vscode.window.showInformationMessage(`Flowbaby: installed for ${label}. ${result.out.split("\n")[0] ?? ""}`);
    } else {
      showUnavailable(`install for ${label} failed (exit ${result.code}): ${result.out.split("\n")[0] ?? ""}`);
    }
  };
}
