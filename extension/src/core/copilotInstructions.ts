/**
 * The workspace briefing (INGEST_CONTRACT.md 17.1) in every GitHub Copilot chat request, with no
 * tool call: VS Code's chat adds each `*.instructions.md` file of `.github/instructions/` whose
 * `applyTo` is `**` to every request (Custom instructions, code.visualstudio.com). This module keeps
 * one such file, flowbaby's own, current (INGEST_CONTRACT.md 17.6):
 * - it carries MARKER, and a file without it (the user's own) is never written over or removed;
 * - git never sees it: its path goes to the repository's `.git/info/exclude` before it is written;
 * - an empty briefing removes it, and so does `remove()` (the extension's deactivation);
 * - it is never written or removed through a link: a repository can commit `.github`, its
 *   `instructions` folder, the file or a staging name as a link to `~/.bashrc`, so each step of the
 *   path is checked with lstat (a link refuses the update and says which), the new content is
 *   created exclusively (O_EXCL | O_NOFOLLOW) under a random name, mode 0600, and renamed into place.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export const INSTRUCTIONS_FILE = path.join(".github", "instructions", "flowbaby-memory.instructions.md");
export const MARKER = "<!-- flowbaby: written by the Flowbaby extension from the workspace memory; removed when it stops. -->";
const EXCLUDE_COMMENT = "# flowbaby: the Copilot instructions file the Flowbaby extension keeps current";

export type UpdateOutcome = "written" | "unchanged" | "removed" | "absent" | "user-file" | "refused" | "failed";

const FILE_MODE = 0o600;
const NEW_FILE_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

export interface CopilotInstructionsOptions {
  workspace: string;
  /** The briefing text; throws when the bridge cannot give one (the file is left as it is). */
  fetchBriefing: () => Promise<string>;
  debounceMs?: number;
  log?: (line: string) => void;
}

/** The file's content: front matter that applies it to every request, the marker, the briefing. */
export function render(briefing: string): string {
  return [
    "---",
    'applyTo: "**"',
    'description: "Flowbaby workspace memory: current decisions, open questions and next steps"',
    "---",
    MARKER,
    "",
    briefing.trim(),
    "",
  ].join("\n");
}

/** The file's text, read without following a link; undefined when it cannot be read. */
function readNoFollow(file: string): string | undefined {
  try {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    try {
      return fs.readFileSync(fd, "utf8");
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

export function isOurs(file: string): boolean {
  return readNoFollow(file)?.includes(MARKER) ?? false;
}

/** The first step from `workspace` down to the instructions file that is a link (or a non-folder where a
 * folder belongs), or undefined when the path is safe to write: steps that do not exist yet are. */
export function plantedLink(workspace: string): string | undefined {
  const parts = INSTRUCTIONS_FILE.split(path.sep);
  let at = workspace;
  for (const [index, part] of parts.entries()) {
    at = path.join(at, part);
    let info: fs.Stats;
    try {
      info = fs.lstatSync(at);
    } catch {
      return undefined; // missing: nothing below it exists either
    }
    if (info.isSymbolicLink() || (index < parts.length - 1 && !info.isDirectory())) {
      return at;
    }
  }
  return undefined;
}

/** One folder, 0700 if made here; one that exists is checked by plantedLink. */
function makeFolder(dir: string): void {
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
      throw error;
    }
  }
}

/** Write `content` to `file` (whose folder is checked free of links): created exclusively under a random
 * name, mode 0600, never through a link, then renamed over the file. */
function writePrivate(file: string, content: string): void {
  const staging = `${file}.${crypto.randomBytes(8).toString("hex")}.tmp`;
  const fd = fs.openSync(staging, NEW_FILE_FLAGS, FILE_MODE);
  try {
    try {
      fs.fchmodSync(fd, FILE_MODE); // whatever the umask
      fs.writeFileSync(fd, content);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(staging, file);
  } catch (error) {
    fs.rmSync(staging, { force: true });
    throw error;
  }
}

/** The folder holding `.git` (a directory, or a worktree's `gitdir:` file) at or above `start`. */
function repositoryRoot(start: string): string | undefined {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, ".git"))) {
      return dir;
    }
    if (path.dirname(dir) === dir) {
      return undefined;
    }
  }
}

/** The `info/exclude` file of the repository holding `workspace` (a linked worktree's is its main
 * repository's: git reads info/exclude from the common directory), or undefined outside git. */
export function excludeFile(workspace: string): { file: string; root: string } | undefined {
  const root = repositoryRoot(workspace);
  if (!root) {
    return undefined;
  }
  let gitDir = path.join(root, ".git");
  if (fs.statSync(gitDir).isFile()) {
    const pointer = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(gitDir, "utf8"));
    if (!pointer) {
      return undefined;
    }
    gitDir = path.resolve(root, pointer[1].trim());
    const common = path.join(gitDir, "commondir");
    if (fs.existsSync(common)) {
      gitDir = path.resolve(gitDir, fs.readFileSync(common, "utf8").trim());
    }
  }
  return { file: path.join(gitDir, "info", "exclude"), root };
}

/** Add the instructions file's path to the repository's info/exclude, once. False outside git. */
export function ensureExcluded(workspace: string): boolean {
  const found = excludeFile(workspace);
  if (!found) {
    return false;
  }
  const relative = path.relative(found.root, path.join(workspace, INSTRUCTIONS_FILE)).split(path.sep).join("/");
  const line = `/${relative}*`; // the file and its staging copy
  const current = readNoFollow(found.file) ?? "";
  if (current.split(/\r?\n/).includes(line)) {
    return true;
  }
  fs.mkdirSync(path.dirname(found.file), { recursive: true });
  if (fs.lstatSync(path.dirname(found.file)).isSymbolicLink()) {
    throw new Error(`${path.dirname(found.file)} is a symbolic link; flowbaby does not write through it`);
  }
  const separator = current && !current.endsWith("\n") ? "\n" : "";
  const flags = fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW;
  const fd = fs.openSync(found.file, flags, FILE_MODE); // a link at info/exclude fails (ELOOP)
  try {
    fs.writeFileSync(fd, `${separator}${EXCLUDE_COMMENT}\n${line}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

export class CopilotInstructions {
  readonly file: string;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<UpdateOutcome> | undefined;
  private again = false;
  private toldUserFile = false;
  private toldLink = false;
  private readonly debounceMs: number;

  constructor(private readonly opts: CopilotInstructionsOptions) {
    this.file = path.join(opts.workspace, INSTRUCTIONS_FILE);
    this.debounceMs = opts.debounceMs ?? 2_000;
  }

  /** Update soon: calls within `debounceMs` of each other make one briefing request. */
  refresh(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.update(), this.debounceMs);
  }

  /** Fetch the briefing and write, keep or remove the file now (one update at a time). */
  async update(): Promise<UpdateOutcome> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.write().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.refresh();
      }
    });
    return this.running;
  }

  /** Remove the file if it is flowbaby's (and the folders it made, if empty). */
  remove(): boolean {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (plantedLink(this.opts.workspace) || !isOurs(this.file)) {
      return false;
    }
    fs.rmSync(this.file, { force: true });
    for (const dir of [path.dirname(this.file), path.dirname(path.dirname(this.file))]) {
      try {
        fs.rmdirSync(dir); // only when empty
      } catch {
        break;
      }
    }
    return true;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async write(): Promise<UpdateOutcome> {
    let briefing: string;
    try {
      briefing = (await this.opts.fetchBriefing()).trim();
    } catch (error) {
      this.opts.log?.(`Copilot instructions not updated: ${(error as Error).message}`);
      return "failed";
    }
    const link = plantedLink(this.opts.workspace);
    if (link) {
      if (!this.toldLink) {
        this.toldLink = true;
        this.opts.log?.(`Copilot instructions not written: ${link} is a symbolic link (a repository can commit one); remove it`);
      }
      return "refused";
    }
    const exists = fs.existsSync(this.file);
    if (exists && !isOurs(this.file)) {
      if (!this.toldUserFile) {
        this.toldUserFile = true;
        this.opts.log?.(`Copilot instructions: ${this.file} is not flowbaby's; it is left as it is`);
      }
      return "user-file";
    }
    if (!briefing) {
      return this.remove() ? "removed" : "absent";
    }
    const content = render(briefing);
    if (exists && readNoFollow(this.file) === content && (fs.lstatSync(this.file).mode & 0o777) === FILE_MODE) {
      return "unchanged";
    }
    try {
      ensureExcluded(this.opts.workspace); // before the file exists, so git never lists it
      for (const dir of [path.dirname(path.dirname(this.file)), path.dirname(this.file)]) {
        makeFolder(dir);
      }
      if (plantedLink(this.opts.workspace)) {
        return "refused"; // appeared since the check above
      }
      writePrivate(this.file, content);
    } catch (error) {
      this.opts.log?.(`Copilot instructions not written: ${(error as Error).message}`);
      return "failed";
    }
    return "written";
  }
}
