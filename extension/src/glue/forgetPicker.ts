/**
 * Forget Memory's UI (20.3): a QuickPick over listMemories that also takes a typed topicId, the dry
 * run's count in a modal warning; the flow itself is core/forgetMemory.ts.
 */
import * as vscode from "vscode";
import { FORGET_BUTTON, ForgetUi, MemoryPick } from "../core/forgetMemory";

type Item = vscode.QuickPickItem & { topicId: string };

export const forgetUi: ForgetUi = {
  pick: (items) => pickMemory(items),
  confirm: async (message, detail) =>
    (await vscode.window.showWarningMessage(message, { modal: true, detail }, FORGET_BUTTON)) === FORGET_BUTTON,
  info: (message) => void vscode.window.showInformationMessage(message),
  error: (message) => void vscode.window.showErrorMessage(message),
};

function pickMemory(items: MemoryPick[]): Promise<string | undefined> {
  return new Promise((resolve) => {
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
  });
}
