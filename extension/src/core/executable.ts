/**
 * Which `flowbaby` to run: the user's setting, then the workspace's own .venv (only in a trusted
 * workspace and once the user confirmed that very file), then PATH.
 *
 * A cloned repository can commit `.venv/bin/flowbaby`: running it because it is there would run a
 * program the repository chose. So the workspace's executable is run only when VS Code trusts the
 * workspace and the user said yes to it once; the answer is remembered (the extension's globalState)
 * for that real path with those exact bytes, so a changed file is asked about again
 * (INGEST_CONTRACT.md 15.14).
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export interface FlowbabyCommand {
  /** Program to spawn. */
  file: string;
  /** Arguments before the subcommand (`bridge`, `mcp`, `install`, ...). */
  prefix: string[];
  /** Where it was found, for the logs. */
  source: "setting" | "pythonPath" | "workspace .venv" | "PATH";
}

export interface CommandSettings {
  command?: string;
  pythonPath?: string;
}

/** What decides whether the workspace's own executable may run (VS Code's APIs in the extension). */
export interface WorkspaceExecutablePolicy {
  /** `vscode.workspace.isTrusted`. */
  trusted: boolean;
  /** Fingerprints (see fingerprint) the user confirmed before. */
  approved: readonly string[];
  /** Asks the user whether to run `file` (resolving to `real`); true: run it. */
  ask(file: string, real: string): Promise<boolean>;
  /** Keeps a confirmed fingerprint for the next time. */
  remember(fingerprint: string): Promise<void> | PromiseLike<void>;
}

export interface CommandChoice {
  command: FlowbabyCommand | undefined;
  /** Set when the workspace has its own flowbaby that was not run: which file and why. */
  skipped?: string;
}

export const APPROVED_EXECUTABLES_KEY = "flowbaby.approvedWorkspaceExecutables";

const IS_WINDOWS = process.platform === "win32";
const PYTHON_ENTRY = "import sys; sys.argv[0] = 'flowbaby'; from flowbaby.cli import main; main()";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** `name` in PATH's absolute folders (a relative entry such as `.` would name the workspace, where the bridge runs). */
export function findOnPath(name: string, searchPath: string | undefined = process.env.PATH): string | undefined {
  const names = IS_WINDOWS ? [`${name}.exe`, `${name}.cmd`, name] : [name];
  for (const folder of (searchPath ?? "").split(path.delimiter)) {
    if (!path.isAbsolute(folder)) {
      continue;
    }
    for (const candidate of names) {
      const file = path.join(folder, candidate);
      if (isExecutable(file)) {
        return file;
      }
    }
  }
  return undefined;
}

/** The user's settings, then PATH: what runs without asking anyone. */
export function resolveFlowbabyCommand(
  settings: CommandSettings,
  searchPath: string | undefined = process.env.PATH,
): FlowbabyCommand | undefined {
  if (settings.command && settings.command.trim()) {
    return { file: settings.command.trim(), prefix: [], source: "setting" };
  }
  if (settings.pythonPath && settings.pythonPath.trim()) {
    return { file: settings.pythonPath.trim(), prefix: ["-P", "-c", PYTHON_ENTRY], source: "pythonPath" };
  }
  const onPath = findOnPath("flowbaby", searchPath);
  return onPath ? { file: onPath, prefix: [], source: "PATH" } : undefined;
}

/** The workspace's `.venv/bin/flowbaby` (`.venv\Scripts\flowbaby.exe`) when it is an executable file. */
export function workspaceExecutable(workspace: string | undefined): string | undefined {
  if (!workspace) {
    return undefined;
  }
  const file = IS_WINDOWS
    ? path.join(workspace, ".venv", "Scripts", "flowbaby.exe")
    : path.join(workspace, ".venv", "bin", "flowbaby");
  return isExecutable(file) ? file : undefined;
}

/** sha256 of the file's real path and its bytes: what a confirmation is remembered by. */
export function fingerprint(real: string): string {
  return createHash("sha256").update(real).update("\0").update(fs.readFileSync(real)).digest("hex");
}

/** The command to run: the settings, then the workspace's own executable if the policy allows it, then PATH. */
export async function chooseFlowbabyCommand(
  settings: CommandSettings,
  workspace: string | undefined,
  policy: WorkspaceExecutablePolicy,
  searchPath: string | undefined = process.env.PATH,
): Promise<CommandChoice> {
  const fallback = resolveFlowbabyCommand(settings, searchPath);
  const local = workspaceExecutable(workspace);
  if (fallback?.source === "setting" || fallback?.source === "pythonPath" || !local) {
    return { command: fallback };
  }
  if (!policy.trusted) {
    return { command: fallback, skipped: `${local}: the workspace is not trusted` };
  }
  let real: string;
  let print: string;
  try {
    real = fs.realpathSync(local);
    print = fingerprint(real);
  } catch (error) {
    return { command: fallback, skipped: `${local}: ${(error as Error).message}` };
  }
  if (!policy.approved.includes(print)) {
    if (!(await policy.ask(local, real))) {
      return { command: fallback, skipped: `${local}: not confirmed` };
    }
    await policy.remember(print);
  }
  return { command: { file: local, prefix: [], source: "workspace .venv" } };
}
