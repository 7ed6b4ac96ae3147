/** Language Model Tools (the docs' #flowbabyStoreSummary and #flowbabyRetrieveMemory) and the MCP server. */
import * as vscode from "vscode";
import { AgentApi, RETRIEVE_TOOL, STORE_TOOL, formatRetrieveResult, formatStoreResult } from "../core/agentApi";
import { serverEnv } from "../core/serverEnv";
import { Runtime } from "./runtime";
import { settings } from "./settings";

export function registerTools(api: AgentApi, refreshStatus: () => Promise<void>): vscode.Disposable[] {
  return [
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
  ];
}

/** MCP: the same tools for agent mode and any MCP-aware chat, without a config file (where VS Code has the API). */
export function registerMcpServer(runtime: Runtime): vscode.Disposable[] {
  if (typeof vscode.lm.registerMcpServerDefinitionProvider !== "function") {
    return [];
  }
  const { workspace, command } = runtime;
  const changed = new vscode.EventEmitter<void>();
  return [
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
  ];
}
