/**
 * The `flowbaby bridge` process: spawn, health handshake with a deadline, restart with backoff
 * after a crash, clean shutdown. When another process owns the workspace the bridge itself works
 * through that owner (INGEST_CONTRACT.md 9.1); a WORKSPACE_BUSY start-up is retried, never shown
 * as a failure of a call.
 */
import { ChildProcess, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import * as fs from "node:fs";
import { FlowbabyCommand } from "./executable";
import { JsonObject, JsonRpcConnection, RpcTimeoutError } from "./jsonRpc";

export interface BridgeOptions {
  workspace: string;
  command: FlowbabyCommand;
  /** Extra bridge arguments (for example `--rate-limit-per-minute`). */
  extraArgs?: string[];
  env?: NodeJS.ProcessEnv;
  healthTimeoutMs?: number;
  /** Reply deadline of one call: a little above the bridge's own `--request-timeout` (60 s). */
  requestTimeoutMs?: number;
  /** First restart delay; doubles per consecutive failure up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Consecutive failed starts after which the client gives up until `restart()`. */
  maxFailures?: number;
  /** How long `stop()` waits for the bridge to exit before it is killed. */
  shutdownTimeoutMs?: number;
}

/** Why the bridge cannot serve: its `bridgeUnavailable` notification, or a failed start. */
export class BridgeUnavailableError extends Error {
  constructor(
    message: string,
    readonly errorCode: string,
  ) {
    super(message);
  }
}

export type BridgeState = "stopped" | "starting" | "ready" | "restarting" | "unavailable";

/**
 * Events: `log` (line), `state` (BridgeState), `ready` (health result), `notification` (method, params),
 * `unavailable` (BridgeUnavailableError), `crashed` (exit code, signal).
 */
export class BridgeClient extends EventEmitter {
  private child: ChildProcess | undefined;
  private rpc: JsonRpcConnection | undefined;
  private starting: Promise<JsonObject> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopping = false;
  private lastError: BridgeUnavailableError | undefined;
  private _state: BridgeState = "stopped";
  private readonly opts: Required<Omit<BridgeOptions, "extraArgs" | "env">> & Pick<BridgeOptions, "extraArgs" | "env">;

  constructor(options: BridgeOptions) {
    super();
    this.opts = {
      healthTimeoutMs: 30_000,
      requestTimeoutMs: 70_000,
      initialBackoffMs: 1_000,
      maxBackoffMs: 30_000,
      maxFailures: 5,
      shutdownTimeoutMs: 10_000,
      ...options,
    };
  }

  get state(): BridgeState {
    return this._state;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Exit code of the last bridge process once it has exited (0 after a clean stop). */
  get exitCode(): number | null | undefined {
    return this.child?.exitCode;
  }

  /** Starts the bridge (if needed) and resolves with its first `health` result. */
  start(): Promise<JsonObject> {
    this.stopping = false;
    if (this._state === "ready" && this.rpc && !this.rpc.isClosed) {
      return this.rpc.request("health", undefined, this.opts.healthTimeoutMs);
    }
    if (!this.starting) {
      this.clearRestartTimer();
      this.starting = this.launch().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** One JSON-RPC call; starts the bridge first if it is not running. */
  async call(method: string, params?: JsonObject, timeoutMs = this.opts.requestTimeoutMs): Promise<JsonObject> {
    if (this.stopping) {
      throw new BridgeUnavailableError("The Flowbaby bridge is shutting down", "FLOWBABY_ERROR");
    }
    if (this._state === "unavailable" && this.lastError) {
      throw this.lastError;
    }
    if (this.restartTimer) {
      // Keep the backoff: wait for the scheduled restart instead of starting at once.
      await new Promise<void>((resolve, reject) => {
        const settle = (state: BridgeState) => {
          if (state === "ready" || state === "unavailable" || state === "stopped") {
            this.off("state", settle);
            if (state === "ready") {
              resolve();
            } else {
              reject(this.lastError ?? new BridgeUnavailableError("The Flowbaby bridge stopped", "FLOWBABY_ERROR"));
            }
          }
        };
        this.on("state", settle);
      });
    }
    if (this._state !== "ready" || !this.rpc || this.rpc.isClosed) {
      await this.start();
    }
    return this.rpc!.request(method, params, timeoutMs);
  }

  /** Forgets earlier failures and starts a fresh bridge (the "Restart Bridge" command). */
  async restart(): Promise<JsonObject> {
    await this.stop();
    this.failures = 0;
    this.lastError = undefined;
    return this.start();
  }

  /** Graceful stop: `shutdown`, then wait for the exit; SIGTERM and SIGKILL as fallbacks. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.clearRestartTimer();
    const child = this.child;
    const rpc = this.rpc;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.setState("stopped");
      return;
    }
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    if (rpc && !rpc.isClosed) {
      await rpc.request("shutdown", undefined, 5_000).catch(() => undefined);
    }
    child.stdin?.end();
    const waited = await Promise.race([exited.then(() => true), delay(this.opts.shutdownTimeoutMs).then(() => false)]);
    if (!waited) {
      this.log(`bridge pid ${child.pid} did not exit within ${this.opts.shutdownTimeoutMs} ms; sending SIGTERM`);
      child.kill("SIGTERM");
      const termed = await Promise.race([exited.then(() => true), delay(5_000).then(() => false)]);
      if (!termed) {
        child.kill("SIGKILL");
        await exited;
      }
    }
    this.setState("stopped");
  }

  private async launch(): Promise<JsonObject> {
    this.setState(this.failures > 0 ? "restarting" : "starting");
    const args = [...this.opts.command.prefix, "bridge", "--workspace", this.opts.workspace, ...(this.opts.extraArgs ?? [])];
    this.log(`starting ${this.opts.command.file} ${args.join(" ")} (${this.opts.command.source})`);
    let child: ChildProcess;
    try {
      child = spawn(this.opts.command.file, args, {
        cwd: isDirectory(this.opts.workspace) ? this.opts.workspace : undefined,
        env: { ...process.env, ...this.opts.env },
        stdio: ["pipe", "pipe", "pipe"],
      });
    } catch (error) {
      return this.failStart(new BridgeUnavailableError(`Could not start flowbaby: ${String(error)}`, "FLOWBABY_ERROR"), false);
    }
    this.child = child;
    const rpc = new JsonRpcConnection(child);
    this.rpc = rpc;
    let unavailable: BridgeUnavailableError | undefined;
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) {
        if (line.trim()) {
          this.log(`[bridge stderr] ${line}`);
        }
      }
    });
    rpc.on("notification", (method: string, params: JsonObject) => {
      if (method === "bridgeUnavailable") {
        unavailable = new BridgeUnavailableError(String(params.error), String(params.errorCode));
      }
      this.emit("notification", method, params);
    });
    const spawnError = new Promise<never>((_, reject) =>
      child.once("error", (error) => reject(new BridgeUnavailableError(`Could not start ${this.opts.command.file}: ${error.message}`, "FLOWBABY_ERROR"))),
    );
    const closed = new Promise<string>((resolve) => child.once("close", (code, signal) => resolve(String(code ?? signal))));
    const exitedEarly = closed.then((code): never => {
      throw (
        unavailable ?? new BridgeUnavailableError(`The Flowbaby bridge exited at start-up (code ${code}); see the logs`, "FLOWBABY_ERROR")
      );
    });
    spawnError.catch(() => undefined);
    exitedEarly.catch(() => undefined);
    let health: JsonObject;
    try {
      health = await Promise.race([rpc.request("health", undefined, this.opts.healthTimeoutMs), spawnError, exitedEarly]);
    } catch (error) {
      child.kill("SIGKILL");
      let failure: BridgeUnavailableError;
      if (error instanceof BridgeUnavailableError) {
        failure = error;
      } else if (error instanceof RpcTimeoutError) {
        failure = new BridgeUnavailableError(
          `The Flowbaby bridge did not answer health within ${this.opts.healthTimeoutMs / 1000}s`,
          "BRIDGE_TIMEOUT",
        );
      } else {
        // The connection closed first: the exit (and its bridgeUnavailable line) tell why.
        failure = await exitedEarly.catch((reason: BridgeUnavailableError) => reason);
      }
      // A busy workspace whose owner could not be reached yet is worth retrying; a bad path or setting is not.
      const retry = failure.errorCode === "WORKSPACE_BUSY" || failure.errorCode === "BRIDGE_TIMEOUT" || !unavailable;
      return this.failStart(failure, retry);
    }
    this.log(`bridge ready: pid ${health.pid} (own pid ${child.pid}), workspace ${health.workspace}`);
    this.failures = 0;
    this.lastError = undefined;
    child.once("exit", (code, signal) => this.onExit(child, code, signal));
    this.setState("ready");
    this.emit("ready", health);
    return health;
  }

  private failStart(error: BridgeUnavailableError, retry: boolean): Promise<JsonObject> {
    this.failures += 1;
    this.log(`bridge start failed (${this.failures}): ${error.errorCode}: ${error.message}`);
    if (retry && this.failures < this.opts.maxFailures && !this.stopping) {
      this.scheduleRestart();
    } else {
      this.lastError = error;
      this.setState("unavailable");
      this.emit("unavailable", error);
    }
    return Promise.reject(error);
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child || this.stopping) {
      return;
    }
    this.log(`bridge pid ${child.pid} exited unexpectedly (code ${code}, signal ${signal})`);
    this.emit("crashed", code, signal);
    this.failures += 1;
    if (this.failures < this.opts.maxFailures) {
      this.scheduleRestart();
    } else {
      this.lastError = new BridgeUnavailableError(`The Flowbaby bridge crashed ${this.failures} times; see the logs`, "FLOWBABY_ERROR");
      this.setState("unavailable");
      this.emit("unavailable", this.lastError);
    }
  }

  private scheduleRestart(): void {
    const wait = Math.min(this.opts.maxBackoffMs, this.opts.initialBackoffMs * 2 ** Math.max(0, this.failures - 1));
    this.log(`restarting the bridge in ${wait} ms`);
    this.setState("restarting");
    this.clearRestartTimer();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.start().catch(() => undefined);
    }, wait);
  }

  private clearRestartTimer(): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
  }

  private setState(state: BridgeState): void {
    if (state !== this._state) {
      this._state = state;
      this.emit("state", state);
    }
  }

  private log(line: string): void {
    this.emit("log", line);
  }
}

function isDirectory(folder: string): boolean {
  try {
    return fs.statSync(folder).isDirectory();
  } catch {
    return false;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
