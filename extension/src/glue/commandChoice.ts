/** Which flowbaby to run, asking once (a modal) before running the workspace's own .venv/bin/flowbaby. */
import * as vscode from "vscode";
import { APPROVED_EXECUTABLES_KEY, CommandChoice, CommandSettings, chooseFlowbabyCommand } from "../core/executable";

export function chooseCommand(
  context: vscode.ExtensionContext,
  config: CommandSettings,
  workspace: string | undefined,
): Promise<CommandChoice> {
  const approved = context.globalState.get<string[]>(APPROVED_EXECUTABLES_KEY, []);
  return chooseFlowbabyCommand(config, workspace, {
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
}
