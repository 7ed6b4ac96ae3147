/** Which `flowbaby` to run: the setting, then the workspace's .venv, then PATH. */
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

export function findOnPath(name: string, searchPath: string | undefined = process.env.PATH): string | undefined {
  const names = IS_WINDOWS ? [`${name}.exe`, `${name}.cmd`, name] : [name];
  for (const folder of (searchPath ?? "").split(path.delimiter)) {
    for (const candidate of names) {
      const file = path.join(folder, candidate);
      if (folder && isExecutable(file)) {
        return file;
      }
    }
  }
  return undefined;
}

/** Resolves the command, or undefined when flowbaby is found nowhere. */
export function resolveFlowbabyCommand(
  settings: CommandSettings,
  workspace: string | undefined,
  searchPath: string | undefined = process.env.PATH,
): FlowbabyCommand | undefined {
  if (settings.command && settings.command.trim()) {
    return { file: settings.command.trim(), prefix: [], source: "setting" };
  }
  if (settings.pythonPath && settings.pythonPath.trim()) {
    return { file: settings.pythonPath.trim(), prefix: ["-P", "-c", PYTHON_ENTRY], source: "pythonPath" };
  }
  if (workspace) {
    const venv = IS_WINDOWS
      ? path.join(workspace, ".venv", "Scripts", "flowbaby.exe")
      : path.join(workspace, ".venv", "bin", "flowbaby");
    if (isExecutable(venv)) {
      return { file: venv, prefix: [], source: "workspace .venv" };
    }
  }
  const onPath = findOnPath("flowbaby", searchPath);
  return onPath ? { file: onPath, prefix: [], source: "PATH" } : undefined;
}
