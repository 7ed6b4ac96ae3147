/**
 * The team-server settings (`flowbaby.serverUrl`, `flowbaby.serverTokenFile`, `flowbaby.serverNamespace`)
 * as the environment of the bridge and MCP server the extension starts (INGEST_CONTRACT.md 15.10).
 * Only the token file's path is passed, never a token: settings files are plain text and may be synced.
 */
import * as os from "node:os";
import * as path from "node:path";

export interface ServerSettings {
  serverUrl?: string;
  serverTokenFile?: string;
  serverNamespace?: string;
}

/** `~/x` becomes an absolute path: the bridge does not expand it for an environment variable. */
function expandHome(file: string, home: string): string {
  return file === "~" || file.startsWith("~/") ? path.join(home, file.slice(1)) : file;
}

export function serverEnv(settings: ServerSettings, home: string = os.homedir()): Record<string, string> {
  const url = (settings.serverUrl ?? "").trim();
  if (!url) {
    return {};
  }
  const env: Record<string, string> = { FLOWBABY_SERVER_URL: url };
  const tokenFile = (settings.serverTokenFile ?? "").trim();
  if (tokenFile) {
    env.FLOWBABY_SERVER_TOKEN_FILE = expandHome(tokenFile, home);
  }
  const namespace = (settings.serverNamespace ?? "").trim();
  if (namespace) {
    env.FLOWBABY_SERVER_NAMESPACE = namespace;
  }
  return env;
}
