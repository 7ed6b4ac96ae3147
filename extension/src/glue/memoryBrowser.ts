/**
 * The memory browser, served by the workspace's `flowbaby serve` (started or reused by `flowbaby ui`)
 * and shown in a webview through an iframe to that loopback server; the one-time sign-in code
 * goes in the fragment (never sent to a server) and the page keeps its session in memory.
 */
import * as vscode from "vscode";
import { Runtime, runFlowbaby } from "./runtime";

interface PanelSlot {
  panel?: vscode.WebviewPanel;
}

/** Opens (or reuses) the panel on `view` ("memories", "graph", ...). */
export function memoryBrowserOpener(runtime: Runtime): (view?: string) => Promise<void> {
  const slot: PanelSlot = {};
  return async (view = "memories") => {
    const { workspace, command, logs, showUnavailable } = runtime;
    if (!workspace || !command) {
      showUnavailable("no workspace folder or flowbaby executable");
      return;
    }
    // `flowbaby ui` reuses or starts the workspace's service on a port of its own: the link names it.
    const started = await runFlowbaby(command, ["ui", "--workspace", workspace, "--no-open"], workspace);
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
    showPanel(slot, base, `${base}?embedded=1#/${view}?code=${encodeURIComponent(code)}`);
  };
}

function showPanel(slot: PanelSlot, base: string, src: string): void {
  const origin = new URL(base).origin;
  if (!slot.panel) {
    slot.panel = vscode.window.createWebviewPanel("flowbaby.browser", "Flowbaby Memory Browser", vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
    });
    slot.panel.onDidDispose(() => (slot.panel = undefined));
  }
  slot.panel.webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; style-src 'unsafe-inline';">
<style>html,body,iframe{margin:0;padding:0;width:100%;height:100vh;border:0;overflow:hidden}</style></head>
<body><iframe src="${src.replace(/"/g, "&quot;")}" title="Flowbaby memory browser"
 sandbox="allow-scripts allow-same-origin allow-forms allow-downloads allow-modals"></iframe></body></html>`;
  slot.panel.reveal();
}
