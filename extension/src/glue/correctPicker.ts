/**
 * Edit Memory's and Mark Memory Superseded's UI (issue 50, INGEST_CONTRACT.md 20.6): the forget
 * picker's list, the fields in a JSON document stored on "Store New Version", a modal warning before
 * a supersession; the flows themselves are core/correctMemory.ts.
 */
import * as vscode from "vscode";
import { CorrectUi, SUPERSEDE_BUTTON } from "../core/correctMemory";
import { JsonObject } from "../core/jsonRpc";
import { pickMemory } from "./forgetPicker";

const STORE = "Store New Version";

export const correctUi: CorrectUi = {
  pick: (items, title) => pickMemory(items, title, "The memory with this topicId"),
  edit: editFields,
  confirm: async (message, detail) =>
    (await vscode.window.showWarningMessage(message, { modal: true, detail }, SUPERSEDE_BUTTON)) === SUPERSEDE_BUTTON,
  info: (message) => void vscode.window.showInformationMessage(message),
  error: (message) => void vscode.window.showErrorMessage(message),
};

async function editFields(fields: JsonObject): Promise<JsonObject | undefined> {
  const document = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(fields, null, 2) });
  await vscode.window.showTextDocument(document);
  const choice = await vscode.window.showInformationMessage(
    "Flowbaby: edit the memory's fields in this JSON document, then store them as a new version.",
    STORE,
    "Cancel",
  );
  if (choice !== STORE) {
    return undefined;
  }
  try {
    const edited: unknown = JSON.parse(document.getText());
    return edited && typeof edited === "object" && !Array.isArray(edited) ? (edited as JsonObject) : undefined;
  } catch (error) {
    void vscode.window.showErrorMessage(`Flowbaby: the document is not a JSON object: ${(error as Error).message}`);
    return undefined;
  }
}
