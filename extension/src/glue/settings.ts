/** The extension's settings, read fresh on every call (a change applies without a reload). */
import * as vscode from "vscode";
import { userValue } from "../core/userSettings";

export type Settings = ReturnType<typeof settings>;

export function settings() {
  const flowbaby = vscode.workspace.getConfiguration("flowbaby");
  const access = vscode.workspace.getConfiguration("flowbabyMemory.agentAccess");
  return {
    command: userValue(flowbaby, "command"),
    pythonPath: userValue(flowbaby, "pythonPath"),
    healthTimeoutMs: Math.max(1, flowbaby.get<number>("healthTimeoutSeconds", 30)) * 1000,
    showSuccess: flowbaby.get<boolean>("notifications.showSuccess", true),
    copilotInstructions: flowbaby.get<boolean>("copilotInstructions", true),
    rateLimitPerMinute: access.get<number>("rateLimitPerMinute", 10),
    maxConcurrentRequests: access.get<number>("maxConcurrentRequests", 2),
    serverUrl: userValue(flowbaby, "serverUrl"),
    serverTokenFile: userValue(flowbaby, "serverTokenFile"),
    serverNamespace: userValue(flowbaby, "serverNamespace"),
  };
}
