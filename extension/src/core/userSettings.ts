/**
 * The settings that choose what runs and where memories and the token go (`flowbaby.command`,
 * `flowbaby.pythonPath`, `flowbaby.serverUrl`, `flowbaby.serverTokenFile`, `flowbaby.serverNamespace`)
 * are `machine` scoped in package.json, so VS Code ignores them in a repository's
 * `.vscode/settings.json`. They are also read here from the user's own settings only (the global
 * value), whatever a workspace or folder sets (INGEST_CONTRACT.md 15.14).
 */
export const USER_ONLY_SETTINGS = ["command", "pythonPath", "serverUrl", "serverTokenFile", "serverNamespace"] as const;
export type UserOnlySetting = (typeof USER_ONLY_SETTINGS)[number];

/** What `vscode.WorkspaceConfiguration.inspect` offers (kept narrow so the check runs under plain node). */
export interface Inspectable {
  inspect<T>(section: string): { globalValue?: T; workspaceValue?: T; workspaceFolderValue?: T } | undefined;
}

/** The user's (or the machine's) value of a user-only setting; "" when they set none. */
export function userValue(config: Inspectable, key: UserOnlySetting): string {
  const value = config.inspect<unknown>(key)?.globalValue;
  return typeof value === "string" ? value : "";
}
