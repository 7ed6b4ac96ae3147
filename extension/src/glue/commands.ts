/** The command palette's commands and the three JSON commands other extensions call. */
import * as vscode from "vscode";
import { AgentApi } from "../core/agentApi";
import { editMemoryCommand, supersedeMemoryCommand } from "../core/correctMemory";
import { forgetMemoryCommand } from "../core/forgetMemory";
import { JsonObject } from "../core/jsonRpc";
import { correctUi } from "./correctPicker";
import { forgetUi } from "./forgetPicker";
import { clientInstaller } from "./installers";
import { memoryBrowserOpener } from "./memoryBrowser";
import { Runtime } from "./runtime";

export function registerCommands(runtime: Runtime, api: AgentApi, refreshStatus: () => Promise<void>): vscode.Disposable[] {
  const openMemoryBrowser = memoryBrowserOpener(runtime);
  const showGraph = () => openMemoryBrowser("graph");
  const install = clientInstaller(runtime);
  const correctDeps = () => ({ call: runtime.call, ui: correctUi, activity: (line: string) => runtime.activity.appendLine(line) });
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  return [
    vscode.commands.registerCommand("Flowbaby.ingestForAgent", async (requestJson: string) => {
      const answer = await api.ingestForAgent(requestJson);
      void refreshStatus();
      return answer;
    }),
    vscode.commands.registerCommand("Flowbaby.retrieveForAgent", (requestJson: string) => api.retrieveForAgent(requestJson)),
    vscode.commands.registerCommand("Flowbaby.backgroundStatus", (operationId?: string) => api.backgroundStatus(operationId)),
    vscode.commands.registerCommand("flowbaby.showGraph", showGraph),
    vscode.commands.registerCommand("flowbaby.openMemoryBrowser", () => openMemoryBrowser()),
    vscode.commands.registerCommand("flowbaby.showStats", () => showStats(runtime, showGraph)),
    vscode.commands.registerCommand("flowbaby.repairIndex", () => repairIndex(runtime, refreshStatus)),
    vscode.commands.registerCommand("flowbaby.forgetMemory", async (topicId?: string) => {
      const outcome = await forgetMemoryCommand(
        { call: runtime.call, ui: forgetUi, activity: (line) => runtime.activity.appendLine(line) },
        typeof topicId === "string" ? topicId : undefined,
      );
      if (outcome.status === "forgotten") {
        void refreshStatus();
      }
    }),
    vscode.commands.registerCommand("flowbaby.editMemory", (topicId?: string) => editMemoryCommand(correctDeps(), text(topicId))),
    vscode.commands.registerCommand("flowbaby.supersedeMemory", (older?: string, newer?: string) =>
      supersedeMemoryCommand(correctDeps(), text(older), text(newer)),
    ),
    vscode.commands.registerCommand("flowbaby.openLogs", runtime.openLogs),
    vscode.commands.registerCommand("flowbaby.showActivity", () => runtime.activity.show(true)),
    vscode.commands.registerCommand("flowbaby.installClaudeCode", () => install("claude-code", "Claude Code")),
    vscode.commands.registerCommand("flowbaby.installOpenCode", () => install("opencode", "OpenCode")),
    vscode.commands.registerCommand("flowbaby.restartBridge", async () => {
      await runtime.bridge?.restart().catch((error: Error) => runtime.showUnavailable(error.message));
    }),
  ];
}

/** Graph counts and the top entities in a toast, then the graph view. */
async function showStats(runtime: Runtime, showGraph: () => Promise<void>): Promise<void> {
  try {
    const stats = await runtime.call("graphStats");
    const top = ((stats.topEntities as JsonObject[]) ?? []).slice(0, 5).map((row) => String(row.name));
    void vscode.window.showInformationMessage(
      `Flowbaby graph: ${String(stats.memories)} memories (${String(stats.memoriesInGraph)} in the graph), ` +
        `${String(stats.entities)} entities, ${String(stats.relations)} relations.` +
        (top.length ? ` Top entities: ${top.join(", ")}.` : ""),
    );
  } catch (error) {
    runtime.showUnavailable((error as Error).message);
    return;
  }
  await showGraph();
}

async function repairIndex(runtime: Runtime, refreshStatus: () => Promise<void>): Promise<void> {
  try {
    const result = await runtime.call("repair");
    const index = (result.index ?? {}) as JsonObject;
    void vscode.window.showInformationMessage(
      `Flowbaby: repair queued ${String(result.requeuedMemories)} graph(s) and ${String(result.reembeddedMemories)} embedding(s); index ${String(index.status)}.`,
    );
    void refreshStatus();
  } catch (error) {
    runtime.showUnavailable((error as Error).message);
  }
}
