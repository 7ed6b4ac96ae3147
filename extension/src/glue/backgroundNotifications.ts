/** A background graph build finished: a line in Agent Activity and a toast (success only if enabled). */
import * as vscode from "vscode";
import { isoSeconds } from "../core/agentApi";
import { JsonObject } from "../core/jsonRpc";
import { Runtime, errorWithLogs } from "./runtime";
import { settings } from "./settings";

export function announceBackgroundResults(runtime: Runtime, refreshStatus: () => Promise<void>): void {
  runtime.bridge?.on("notification", (method: string, params: JsonObject) => {
    if (method !== "backgroundOperationCompleted") {
      return;
    }
    const id = String(params.operationId);
    if (params.status === "completed") {
      runtime.activity.appendLine(`[Background] ${isoSeconds()} - Operation ${id} - Status: completed`);
      if (settings().showSuccess) {
        void vscode.window.showInformationMessage(`Flowbaby: memory graph built (${id}).`);
      }
    } else {
      const code = String(params.errorCode ?? "UNKNOWN");
      runtime.activity.appendLine(`[Background] ${isoSeconds()} - Operation ${id} - Status: failed (${code})`);
      errorWithLogs(`Flowbaby: graph building failed for ${id}: ${code}.`, runtime.openLogs);
    }
    void refreshStatus();
  });
}
