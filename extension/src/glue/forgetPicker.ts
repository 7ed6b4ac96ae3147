/**
 * Forget Memory's UI (20.3): a QuickPick over listMemories that also takes a typed topicId, the dry
 * run's count in a modal warning; the flow itself is core/forgetMemory.ts. Edit and Supersede
 * (glue/correctPicker.ts) pick with the same list.
 */
import * as vscode from "vscode";
import { FORGET_BUTTON, ForgetUi } from "../core/forgetMemory";
import { MemoryPick } from "../core/memoryCommand";

type Item = vscode.QuickPickItem & { topicId: string };

export const forgetUi: ForgetUi = {
  pick: (items, title) => pickMemory(items, title, "Forget the memory with this topicId"),
  confirm: async (message, detail) =>
    (await vscode.window.showWarningMessage(message, { modal: true, detail }, FORGET_BUTTON)) === FORGET_BUTTON,
  info: (message) => void vscode.window.showInformationMessage(message),
  error: (message) => void vscode.window.showErrorMessage(message),
};

/** A memory picked from `items`, or a typed topicId (offered with `typedDetail`); undefined when cancelled. */
export function pickMemory(items: MemoryPick[], title: string, typedDetail: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const listed: Item[] = items.map((item: MemoryPick) => ({ ...item }));
    const quick = vscode.window.createQuickPick<Item>();
    quick.title = title;
    quick.placeholder = "Pick a memory, or type its topicId";
    quick.matchOnDescription = true;
    quick.items = listed;
    quick.onDidChangeValue((value) => {
      const typed = value.trim();
      const known = listed.some((item) => item.topicId === typed);
      quick.items =
        typed && !known
          ? [{ label: typed, description: "topicId", detail: typedDetail, topicId: typed, alwaysShow: true }, ...listed]
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
