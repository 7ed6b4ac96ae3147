/** Copilot Chat: the briefing in every request, through a git-ignored instructions file (17.6). */
import { TOOL_AGENT_NAME } from "../core/agentApi";
import { CopilotInstructions } from "../core/copilotInstructions";
import { Runtime } from "./runtime";
import { settings } from "./settings";

/** The instructions file's keeper when a bridge serves a workspace; the briefing covers news since the last session. */
export function createInstructions(runtime: Runtime): CopilotInstructions | undefined {
  const { bridge, workspace, context, call, logs } = runtime;
  if (!bridge || !workspace) {
    return undefined;
  }
  const previous = context.workspaceState.get<string>("flowbaby.lastSessionStart");
  void context.workspaceState.update("flowbaby.lastSessionStart", new Date().toISOString());
  return new CopilotInstructions({
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

/** Rewrite the file, or remove it when the setting is off. */
export function instructionsRefresher(instructions: CopilotInstructions | undefined): () => void {
  return () => {
    if (settings().copilotInstructions) {
      instructions?.refresh();
    } else {
      instructions?.remove();
    }
  };
}
