/** What every part of the extension shares once activate has chosen the executable and the bridge. */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { BridgeCall } from "../core/agentApi";
import { BridgeClient } from "../core/bridgeClient";
import { FlowbabyCommand } from "../core/executable";

export interface Runtime {
  context: vscode.ExtensionContext;
  /** The first workspace folder: the memory the extension serves. */
  workspace: string | undefined;
  command: FlowbabyCommand | undefined;
  logs: vscode.LogOutputChannel;
  activity: vscode.OutputChannel;
  bridge: BridgeClient | undefined;
  /** The bridge's JSON-RPC call, or one that always fails with why there is no bridge. */
  call: BridgeCall;
  /** An error toast ("Flowbaby: …") with an "Open logs" button. */
  showUnavailable: (message: string) => void;
  openLogs: () => Promise<void>;
}

/** The Output channel, then the workspace's flowbaby.log beside it when there is one. */
export function logOpener(logs: vscode.LogOutputChannel, workspace: string | undefined): () => Promise<void> {
  return async () => {
    logs.show(true);
    const file = workspace && path.join(workspace, ".flowbaby", "logs", "flowbaby.log");
    if (file && fs.existsSync(file)) {
      await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true, preserveFocus: true });
    }
  };
}

/** An error toast with an "Open logs" button. */
export function errorWithLogs(message: string, openLogs: () => Promise<void>): void {
  void vscode.window.showErrorMessage(message, "Open logs").then((choice) => {
    if (choice === "Open logs") {
      void openLogs();
    }
  });
}

/** Run `flowbaby <args>` (no shell) and collect its exit code and output; never rejects. */
export function runFlowbaby(command: FlowbabyCommand, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(command.file, [...command.prefix, ...args], { cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}`.trim() });
    });
  });
}
