/**
 * The bridge client's lifecycle: the `flowbaby bridge` child when there is a workspace and an
 * executable, else a `call` that fails with why; its events go to the logs and to error toasts.
 */
import * as vscode from "vscode";
import { BridgeCall } from "../core/agentApi";
import { BridgeClient, BridgeUnavailableError } from "../core/bridgeClient";
import { FlowbabyCommand } from "../core/executable";
import { serverEnv } from "../core/serverEnv";
import { Settings } from "./settings";

export interface BridgeSetup {
  bridge: BridgeClient | undefined;
  call: BridgeCall;
}

export function connectBridge(
  workspace: string | undefined,
  command: FlowbabyCommand | undefined,
  config: Settings,
  logs: vscode.LogOutputChannel,
  showUnavailable: (message: string) => void,
): BridgeSetup {
  if (!workspace) {
    const call: BridgeCall = async () => {
      throw new BridgeUnavailableError("Open a folder to use Flowbaby memory", "INVALID_WORKSPACE_PATH");
    };
    return { bridge: undefined, call };
  }
  if (!command) {
    logs.error("flowbaby was not found: set flowbaby.command, put flowbaby on PATH, or confirm the workspace's .venv/bin/flowbaby");
    showUnavailable("bridgeUnavailable: the flowbaby executable was not found (setting flowbaby.command, confirmed workspace .venv, PATH)");
    const call: BridgeCall = async () => {
      throw new BridgeUnavailableError("The flowbaby executable was not found", "FLOWBABY_ERROR");
    };
    return { bridge: undefined, call };
  }
  const bridge = new BridgeClient({ workspace, command, healthTimeoutMs: config.healthTimeoutMs, env: serverEnv(config) });
  bridge.on("log", (line: string) => logs.info(line));
  bridge.on("unavailable", (error: BridgeUnavailableError) =>
    showUnavailable(`bridgeUnavailable: ${error.errorCode}: ${error.message}`),
  );
  bridge.on("crashed", () => logs.warn("the bridge crashed; restarting with backoff"));
  return { bridge, call: (method, params) => bridge.call(method, params) };
}

/** Refresh what depends on the bridge when it is ready and after each background build, then start it. */
export function startBridge(
  bridge: BridgeClient | undefined,
  logs: vscode.LogOutputChannel,
  refreshStatus: () => Promise<void>,
  refreshInstructions: () => void,
): void {
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
}
