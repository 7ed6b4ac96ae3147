/** VS Code glue: everything here is thin; the logic lives in ./core (plain node, unit-tested). */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  AgentApi,
  RETRIEVE_TOOL,
  STORE_TOOL,
  TOOL_AGENT_NAME,
  formatRetrieveResult,
  formatStoreResult,
  isoSeconds,
} from "./core/agentApi";
import { BridgeClient, BridgeUnavailableError } from "./core/bridgeClient";
import { CopilotInstructions } from "./core/copilotInstructions";
import { FORGET_BUTTON, ForgetUi, MemoryPick, forgetMemoryCommand } from "./core/forgetMemory";
import { CorrectUi, SUPERSEDE_BUTTON, editMemoryCommand, supersedeMemoryCommand } from "./core/correctMemory";
import { APPROVED_EXECUTABLES_KEY, FlowbabyCommand, chooseFlowbabyCommand } from "./core/executable";
import { JsonObject } from "./core/jsonRpc";
import { hookProblemView } from "./core/hookProblems";
import { serverEnv } from "./core/serverEnv";
import { RetrievalThrottle } from "./core/throttle";
import { userValue } from "./core/userSettings";
import { ValidationResult, validateIngestRequest } from "./core/validation";

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

function settings() {
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

function run(command: FlowbabyCommand, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(command.file, [...command.prefix, ...args], { cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}`.trim() });
    });
  });
}

export async function activate(context: vscode.ExtensionContext): Promise<FlowbabyExtensionApi> {
  const activity = vscode.window.createOutputChannel("Flowbaby Agent Activity");
  const logs = vscode.window.createOutputChannel("Flowbaby", { log: true });
  context.subscriptions.push(activity, logs);
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const config = settings();
  const approved = context.globalState.get<string[]>(APPROVED_EXECUTABLES_KEY, []);
  const { command, skipped } = await chooseFlowbabyCommand(config, workspace, {
    trusted: vscode.workspace.isTrusted,
    approved,
    ask: async (file, real) => {
      const choice = await vscode.window.showWarningMessage(
        `Run this workspace's own flowbaby, ${file}?`,
        {
          modal: true,
          detail:
            (real !== file ? `It is ${real}. ` : "") +
            "A cloned repository can put any program there. Run it only if you installed it yourself; " +
            "otherwise flowbaby on PATH (or the setting flowbaby.command) is used. Asked once per file.",
        },
        "Run it",
      );
      return choice === "Run it";
    },
    remember: (print) => context.globalState.update(APPROVED_EXECUTABLES_KEY, [...approved, print].slice(-50)),
  });
  if (skipped) {
    logs.warn(`not running the workspace's own flowbaby (${skipped})`);
  }
  const throttle = new RetrievalThrottle(config);

  const openLogs = async () => {
    logs.show(true);
    const file = workspace && path.join(workspace, ".flowbaby", "logs", "flowbaby.log");
    if (file && fs.existsSync(file)) {
      await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true, preserveFocus: true });
    }
  };
  const showUnavailable = (message: string) => {
    void vscode.window.showErrorMessage(`Flowbaby: ${message}`, "Open logs").then((choice) => {
      if (choice === "Open logs") {
        void openLogs();
      }
    });
  };

  let call: (method: string, params?: JsonObject) => Promise<JsonObject>;
  if (!workspace) {
    call = async () => {
      throw new BridgeUnavailableError("Open a folder to use Flowbaby memory", "INVALID_WORKSPACE_PATH");
    };
  } else if (!command) {
    logs.error("flowbaby was not found: set flowbaby.command, put flowbaby on PATH, or confirm the workspace's .venv/bin/flowbaby");
    showUnavailable("bridgeUnavailable: the flowbaby executable was not found (setting flowbaby.command, confirmed workspace .venv, PATH)");
    call = async () => {
      throw new BridgeUnavailableError("The flowbaby executable was not found", "FLOWBABY_ERROR");
    };
  } else {
    bridge = new BridgeClient({ workspace, command, healthTimeoutMs: config.healthTimeoutMs, env: serverEnv(config) });
    bridge.on("log", (line: string) => logs.info(line));
    bridge.on("unavailable", (error: BridgeUnavailableError) =>
      showUnavailable(`bridgeUnavailable: ${error.errorCode}: ${error.message}`),
    );
    bridge.on("crashed", () => logs.warn("the bridge crashed; restarting with backoff"));
    call = (method, params) => bridge!.call(method, params);
  }

  const api = new AgentApi({ call, throttle, activity: (line) => activity.appendLine(line) });

  // Status bar: memories, running and queued operations, index status.
  const status = vscode.window.createStatusBarItem("flowbaby.status", vscode.StatusBarAlignment.Left, 100);
  status.name = "Flowbaby";
  status.command = "flowbaby.showStats";
  status.text = "$(database) Flowbaby: starting…";
  status.show();
  context.subscriptions.push(status);
  const refreshStatus = async () => {
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
  };
  const timer = setInterval(() => void refreshStatus(), 30_000);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });

  bridge?.on("notification", (method: string, params: JsonObject) => {
    if (method !== "backgroundOperationCompleted") {
      return;
    }
    const id = String(params.operationId);
    if (params.status === "completed") {
      activity.appendLine(`[Background] ${isoSeconds()} - Operation ${id} - Status: completed`);
      if (settings().showSuccess) {
        void vscode.window.showInformationMessage(`Flowbaby: memory graph built (${id}).`);
      }
    } else {
      const code = String(params.errorCode ?? "UNKNOWN");
      activity.appendLine(`[Background] ${isoSeconds()} - Operation ${id} - Status: failed (${code})`);
      void vscode.window.showErrorMessage(`Flowbaby: graph building failed for ${id}: ${code}.`, "Open logs").then((choice) => {
        if (choice === "Open logs") {
          void openLogs();
        }
      });
    }
    void refreshStatus();
  });
  // Copilot Chat: the briefing in every request, through a git-ignored instructions file (17.6).
  if (bridge && workspace) {
    const previous = context.workspaceState.get<string>("flowbaby.lastSessionStart");
    void context.workspaceState.update("flowbaby.lastSessionStart", new Date().toISOString());
    instructions = new CopilotInstructions({
      workspace,
      fetchBriefing: async () => {
        const reply = await call("briefing", { agentName: TOOL_AGENT_NAME, ...(previous ? { since: previous } : {}) });
        if (reply.success === false) {
          throw new Error(`${String(reply.errorCode)}: ${String(reply.error)}`);
        }
        return String(reply.text ?? "");
      },
      log: (line) => logs.info(line),
    });
  }
  const refreshInstructions = () => {
    if (settings().copilotInstructions) {
      instructions?.refresh();
    } else {
      instructions?.remove();
    }
  };
  bridge?.on("notification", (method: string) => {
    if (method === "backgroundOperationCompleted") {
      refreshInstructions();
    }
  });
  bridge?.on("ready", () => {
    void refreshStatus();
    refreshInstructions();
  });
  bridge?.start().catch((error: Error) => logs.error(`bridge start: ${error.message}`));

  // The memory browser, served by the workspace's `flowbaby serve` (started or reused by `flowbaby ui`)
  // and shown in a webview through an iframe to that loopback server; the one-time sign-in code
  // goes in the fragment (never sent to a server) and the page keeps its session in memory.
  let browserPanel: vscode.WebviewPanel | undefined;
  const openMemoryBrowser = async (view = "memories") => {
    if (!workspace || !command) {
      showUnavailable("no workspace folder or flowbaby executable");
      return;
    }
    // `flowbaby ui` reuses or starts the workspace's service on a port of its own: the link names it.
    const started = await run(command, ["ui", "--workspace", workspace, "--no-open"], workspace);
    const link = started.out.split("\n").find((line) => line.includes("/ui/signin?code="));
    if (started.code !== 0 || !link) {
      logs.error(started.out);
      showUnavailable(`the memory browser did not start: ${started.out.split("\n").pop() ?? ""}`);
      return;
    }
    const signin = new URL(link.trim());
    const code = signin.searchParams.get("code") ?? "";
    const external = await vscode.env.asExternalUri(vscode.Uri.parse(`http://127.0.0.1:${signin.port}/`));
    const base = external.toString(true).replace(/\/?$/, "/");
    const origin = new URL(base).origin;
    if (!browserPanel) {
      browserPanel = vscode.window.createWebviewPanel("flowbaby.browser", "Flowbaby Memory Browser", vscode.ViewColumn.Active, {
        enableScripts: true,
        retainContextWhenHidden: true,
      });
      browserPanel.onDidDispose(() => (browserPanel = undefined));
    }
    const src = `${base}?embedded=1#/${view}?code=${encodeURIComponent(code)}`;
    browserPanel.webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; style-src 'unsafe-inline';">
<style>html,body,iframe{margin:0;padding:0;width:100%;height:100vh;border:0;overflow:hidden}</style></head>
<body><iframe src="${src.replace(/"/g, "&quot;")}" title="Flowbaby memory browser"
 sandbox="allow-scripts allow-same-origin allow-forms allow-downloads allow-modals"></iframe></body></html>`;
    browserPanel.reveal();
  };
  const showGraph = () => openMemoryBrowser("graph");

  const install = async (client: "claude-code" | "opencode", label: string) => {
    if (!workspace || !command) {
      showUnavailable("no workspace folder or flowbaby executable");
      return;
    }
    const result = await run(command, ["install", "--client", client, "--workspace", workspace], workspace);
    logs.info(`flowbaby install --client ${client}: exit ${result.code}\n${result.out}`);
    if (result.code === 0) {
      void vscode.window.showInformationMessage(`Flowbaby: installed for ${label}. ${result.out.split("\n")[0] ?? ""}`);
    } else {
      showUnavailable(`install for ${label} failed (exit ${result.code}): ${result.out.split("\n")[0] ?? ""}`);
    }
  };

  // Forget Memory (20.3): a QuickPick over listMemories that also takes a typed topicId, the dry
  // run's count in a modal warning, then the real forget.
  const forgetUi: ForgetUi = {
    pick: (items) =>
      new Promise((resolve) => {
        type Item = vscode.QuickPickItem & { topicId: string };
        const listed: Item[] = items.map((item: MemoryPick) => ({ ...item }));
        const quick = vscode.window.createQuickPick<Item>();
        quick.title = "Flowbaby: Forget Memory";
        quick.placeholder = "Pick a memory to forget, or type its topicId";
        quick.matchOnDescription = true;
        quick.items = listed;
        quick.onDidChangeValue((value) => {
          const typed = value.trim();
          const known = listed.some((item) => item.topicId === typed);
          quick.items =
            typed && !known
              ? [{ label: typed, description: "topicId", detail: "Forget the memory with this topicId", topicId: typed, alwaysShow: true }, ...listed]
              : listed;
        });
        let chosen: string | undefined;
        quick.onDidAccept(() => {
          chosen = quick.selectedItems[0]?.topicId;
          quick.hide();
        });
        quick.onDidHide(() => {
          quick.dispose();
          resolve(chosen);
        });
        quick.show();
      }),
    confirm: async (message, detail) =>
      (await vscode.window.showWarningMessage(message, { modal: true, detail }, FORGET_BUTTON)) === FORGET_BUTTON,
    info: (message) => void vscode.window.showInformationMessage(message),
    error: (message) => void vscode.window.showErrorMessage(message),
  };

  // Edit Memory and Mark Memory Superseded (issue 50): the same pick list; the fields are edited in a JSON
  // document, stored when the person presses "Store New Version" on the notification.
  const correctUi: CorrectUi = {
    pick: (items, title) =>
      new Promise((resolve) => {
        const quick = vscode.window.createQuickPick<vscode.QuickPickItem & { topicId: string }>();
        const listed = items.map((item: MemoryPick) => ({ ...item }));
        quick.title = title;
        quick.placeholder = "Pick a memory, or type its topicId";
        quick.matchOnDescription = true;
        quick.items = listed;
        quick.onDidChangeValue((value) => {
          const typed = value.trim();
          quick.items = typed && !listed.some((item) => item.topicId === typed)
            ? [{ label: typed, description: "topicId", topicId: typed, alwaysShow: true }, ...listed]
            : listed;
        });
        let chosen: string | undefined;
        quick.onDidAccept(() => {
          chosen = quick.selectedItems[0]?.topicId;
          quick.hide();
        });
        quick.onDidHide(() => {
          quick.dispose();
          resolve(chosen);
        });
        quick.show();
      }),
    edit: async (fields) => {
      const document = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(fields, null, 2) });
      await vscode.window.showTextDocument(document);
      const choice = await vscode.window.showInformationMessage(
        "Flowbaby: edit the memory's fields in this JSON document, then store them as a new version.",
        "Store New Version",
        "Cancel",
      );
      if (choice !== "Store New Version") {
        return undefined;
      }
      try {
        const edited = JSON.parse(document.getText());
        return edited && typeof edited === "object" && !Array.isArray(edited) ? edited : undefined;
      } catch (error) {
        void vscode.window.showErrorMessage(`Flowbaby: the document is not a JSON object: ${(error as Error).message}`);
        return undefined;
      }
    },
    confirm: async (message, detail) =>
      (await vscode.window.showWarningMessage(message, { modal: true, detail }, SUPERSEDE_BUTTON)) === SUPERSEDE_BUTTON,
    info: (message) => void vscode.window.showInformationMessage(message),
    error: (message) => void vscode.window.showErrorMessage(message),
  };
  const correctDeps = () => ({ call, ui: correctUi, activity: (line: string) => activity.appendLine(line) });

  context.subscriptions.push(
    vscode.commands.registerCommand("flowbaby.editMemory", (topicId?: string) =>
      editMemoryCommand(correctDeps(), typeof topicId === "string" ? topicId : undefined),
    ),
    vscode.commands.registerCommand("flowbaby.supersedeMemory", (older?: string, newer?: string) =>
      supersedeMemoryCommand(
        correctDeps(),
        typeof older === "string" ? older : undefined,
        typeof newer === "string" ? newer : undefined,
      ),
    ),
    vscode.commands.registerCommand("Flowbaby.ingestForAgent", async (requestJson: string) => {
      const answer = await api.ingestForAgent(requestJson);
      void refreshStatus();
      return answer;
    }),
    vscode.commands.registerCommand("Flowbaby.retrieveForAgent", (requestJson: string) => api.retrieveForAgent(requestJson)),
    vscode.commands.registerCommand("Flowbaby.backgroundStatus", (operationId?: string) => api.backgroundStatus(operationId)),
    vscode.commands.registerCommand("flowbaby.showGraph", showGraph),
    vscode.commands.registerCommand("flowbaby.openMemoryBrowser", () => openMemoryBrowser()),
    vscode.commands.registerCommand("flowbaby.showStats", async () => {
      try {
        const stats = await call("graphStats");
        const top = ((stats.topEntities as JsonObject[]) ?? []).slice(0, 5).map((row) => String(row.name));
        void vscode.window.showInformationMessage(
          `Flowbaby graph: ${String(stats.memories)} memories (${String(stats.memoriesInGraph)} in the graph), ` +
            `${String(stats.entities)} entities, ${String(stats.relations)} relations.` +
            (top.length ? ` Top entities: ${top.join(", ")}.` : ""),
        );
      } catch (error) {
        showUnavailable((error as Error).message);
        return;
      }
      await showGraph();
    }),
    vscode.commands.registerCommand("flowbaby.repairIndex", async () => {
      try {
        const result = await call("repair");
        const index = (result.index ?? {}) as JsonObject;
        void vscode.window.showInformationMessage(
          `Flowbaby: repair queued ${String(result.requeuedMemories)} graph(s) and ${String(result.reembeddedMemories)} embedding(s); index ${String(index.status)}.`,
        );
        void refreshStatus();
      } catch (error) {
        showUnavailable((error as Error).message);
      }
    }),
    vscode.commands.registerCommand("flowbaby.forgetMemory", async (topicId?: string) => {
      const outcome = await forgetMemoryCommand(
        { call, ui: forgetUi, activity: (line) => activity.appendLine(line) },
        typeof topicId === "string" ? topicId : undefined,
      );
      if (outcome.status === "forgotten") {
        void refreshStatus();
      }
    }),
    vscode.commands.registerCommand("flowbaby.openLogs", openLogs),
    vscode.commands.registerCommand("flowbaby.showActivity", () => activity.show(true)),
    vscode.commands.registerCommand("flowbaby.installClaudeCode", () => install("claude-code", "Claude Code")),
    vscode.commands.registerCommand("flowbaby.installOpenCode", () => install("opencode", "OpenCode")),
    vscode.commands.registerCommand("flowbaby.restartBridge", async () => {
      await bridge?.restart().catch((error: Error) => showUnavailable(error.message));
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("flowbabyMemory.agentAccess")) {
        throttle.configure(settings());
      }
      if (event.affectsConfiguration("flowbaby.copilotInstructions")) {
        refreshInstructions();
      }
    }),
  );

  // Language Model Tools (the docs' #flowbabyStoreSummary and #flowbabyRetrieveMemory).
  context.subscriptions.push(
    vscode.lm.registerTool<Record<string, unknown>>(STORE_TOOL, {
      prepareInvocation(options) {
        const topic = String(options.input.topic ?? "");
        return {
          invocationMessage: `Storing "${topic}" in Flowbaby memory`,
          confirmationMessages: {
            title: "Store memory in Flowbaby?",
            message: new vscode.MarkdownString(`Store this conversation summary in Flowbaby knowledge graph?\n\n**Topic:** ${topic}`),
          },
        };
      },
      async invoke(options) {
        const result = await api.storeMemoryTool(options.input);
        void refreshStatus();
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(formatStoreResult(result, options.input.topic))]);
      },
    }),
    vscode.lm.registerTool<Record<string, unknown>>(RETRIEVE_TOOL, {
      prepareInvocation(options) {
        const query = String(options.input.query ?? "");
        return {
          invocationMessage: `Searching Flowbaby memory for "${query}"`,
          confirmationMessages: {
            title: "Retrieve Flowbaby memory?",
            message: new vscode.MarkdownString(`Search this workspace's Flowbaby memory for:\n\n> ${query}`),
          },
        };
      },
      async invoke(options) {
        const result = await api.retrieveMemoryTool(options.input);
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(formatRetrieveResult(result))]);
      },
    }),
  );

  // MCP: the same tools for agent mode and any MCP-aware chat, without a config file.
  if (typeof vscode.lm.registerMcpServerDefinitionProvider === "function") {
    const changed = new vscode.EventEmitter<void>();
    context.subscriptions.push(
      changed,
      vscode.lm.registerMcpServerDefinitionProvider("flowbaby.mcp", {
        onDidChangeMcpServerDefinitions: changed.event,
        provideMcpServerDefinitions() {
          if (!workspace || !command) {
            return [];
          }
          return [
            new vscode.McpStdioServerDefinition(
              "Flowbaby",
              command.file,
              [...command.prefix, "mcp", "--workspace", workspace],
              serverEnv(settings()),
            ),
          ];
        },
      }),
    );
  }

  logs.info(
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
