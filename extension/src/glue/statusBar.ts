/** The status bar item: memories, running and queued operations, index status and hook problems. */
import * as vscode from "vscode";
import { BridgeCall } from "../core/agentApi";
import { hookProblemView } from "../core/hookProblems";

/** Show the item and refresh it every 30 s; returns the refresh for events that change the counts. */
export function createStatusBar(context: vscode.ExtensionContext, call: BridgeCall): () => Promise<void> {
  const status = vscode.window.createStatusBarItem("flowbaby.status", vscode.StatusBarAlignment.Left, 100);
  status.name = "Flowbaby";
  status.command = "flowbaby.showStats";
  status.text = "$(database) Flowbaby: starting…";
  status.show();
  context.subscriptions.push(status);
  const refresh = () => refreshStatus(status, call);
  const timer = setInterval(() => void refresh(), 30_000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
  return refresh;
}

async function refreshStatus(status: vscode.StatusBarItem, call: BridgeCall): Promise<void> {
  try {
    const [health, index, background] = await Promise.all([
      call("health"),
      call("indexStatus"),
      call("backgroundStatus", {}),
    ]);
    const counts = (background.counts ?? {}) as Record<string, number>;
    const hooks = hookProblemView(health);
    status.text = `$(${hooks.warning ? "warning" : "database"}) Flowbaby: ${String(health.memories)} memories · ${counts.running ?? 0} running · ${counts.pending ?? 0} queued · ${String(index.status)}${hooks.label}`;
    status.tooltip = [String(index.message), ...hooks.lines, "Click for graph stats and the graph view."].join("\n");
    const warn = index.needs_repair || hooks.warning;
    status.backgroundColor = warn ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  } catch (error) {
    status.text = "$(warning) Flowbaby: unavailable";
    status.tooltip = (error as Error).message;
  }
}
