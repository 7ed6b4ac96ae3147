/** VS Code glue: activate wires the parts in ./glue; the logic lives in ./core (plain node, unit-tested). */
import * as os from "node:os";
import * as vscode from "vscode";
import { AgentApi } from "./core/agentApi";
import { BridgeClient } from "./core/bridgeClient";
import { CopilotInstructions } from "./core/copilotInstructions";
import { RetrievalThrottle } from "./core/throttle";
import { ValidationResult, validateIngestRequest } from "./core/validation";
import { registerMcpServer, registerTools } from "./glue/agentTools";
import { announceBackgroundResults } from "./glue/backgroundNotifications";
import { connectBridge, startBridge } from "./glue/bridgeLifecycle";
import { chooseCommand } from "./glue/commandChoice";
import { registerCommands } from "./glue/commands";
import { createInstructions, instructionsRefresher } from "./glue/copilotBriefing";
import { Runtime, errorWithLogs, logOpener } from "./glue/runtime";
import { Settings, settings } from "./glue/settings";
import { createStatusBar } from "./glue/statusBar";

export { validateIngestRequest };

/** What `vscode.extensions.getExtension('flowbaby.flowbaby').exports` offers other extensions. */
export interface FlowbabyExtensionApi {
  validateIngestRequest(payload: unknown): ValidationResult;
  ingestForAgent(requestJson: string): Promise<string>;
  retrieveForAgent(requestJson: string): Promise<string>;
  backgroundStatus(operationId?: string): Promise<string>;
}

let bridge: BridgeClient | undefined;
let instructions: CopilotInstructions | undefined;

/** The output channels, the executable (asked once for a workspace's own) and the bridge. */
async function createRuntime(context: vscode.ExtensionContext, config: Settings): Promise<Runtime> {
  const activity = vscode.window.createOutputChannel("Flowbaby Agent Activity");
  const logs = vscode.window.createOutputChannel("Flowbaby", { log: true });
  context.subscriptions.push(activity, logs);
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const { command, skipped } = await chooseCommand(context, config, workspace);
  if (skipped) {
    logs.warn(`not running the workspace's own flowbaby (${skipped})`);
  }
  const openLogs = logOpener(logs, workspace);
  const showUnavailable = (message: string) => errorWithLogs(`Flowbaby: ${message}`, openLogs);
  const connected = connectBridge(workspace, command, config, logs, showUnavailable);
  return { context, workspace, command, logs, activity, ...connected, showUnavailable, openLogs };
}

export async function activate(context: vscode.ExtensionContext): Promise<FlowbabyExtensionApi> {
  const config = settings();
  const runtime = await createRuntime(context, config);
  bridge = runtime.bridge;
  const throttle = new RetrievalThrottle(config);
  const api = new AgentApi({ call: runtime.call, throttle, activity: (line) => runtime.activity.appendLine(line) });
  const refreshStatus = createStatusBar(context, runtime.call);
  announceBackgroundResults(runtime, refreshStatus);
  instructions = createInstructions(runtime);
  const refreshInstructions = instructionsRefresher(instructions);
  startBridge(bridge, runtime.logs, refreshStatus, refreshInstructions);
  context.subscriptions.push(
    ...registerCommands(runtime, api, refreshStatus),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("flowbabyMemory.agentAccess")) {
        throttle.configure(settings());
      }
      if (event.affectsConfiguration("flowbaby.copilotInstructions")) {
        refreshInstructions();
      }
    }),
  );
  context.subscriptions.push(...registerTools(api, refreshStatus), ...registerMcpServer(runtime));
  const { workspace, command } = runtime;
  runtime.logs.info(
    `Flowbaby activated on ${os.platform()}; workspace ${workspace ?? "(none)"}; command ${command?.file ?? "(none)"} (${command?.source ?? "-"})`,
  );
  return {
    validateIngestRequest,
    ingestForAgent: (requestJson) => api.ingestForAgent(requestJson),
    retrieveForAgent: (requestJson) => api.retrieveForAgent(requestJson),
    backgroundStatus: (operationId) => api.backgroundStatus(operationId),
  };
}

export async function deactivate(): Promise<void> {
  instructions?.remove(); // the briefing file lives only while the extension runs
  instructions = undefined;
  await bridge?.stop();
  bridge = undefined;
}
