/**
 * JSON-RPC 2.0 over a child's stdio, one message per line (INGEST_CONTRACT.md section 1).
 * Kept free of `vscode` so the node test runner can drive it against a real bridge.
 */
import { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export class RpcTimeoutError extends Error {}
export class RpcClosedError extends Error {}
export class RpcProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: (value: JsonObject) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Matches replies to requests by id (the bridge answers out of order) and emits every
 * notification as `notification` (method, params).
 */
export class JsonRpcConnection extends EventEmitter {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private buffer = "";
  private closed = false;

  constructor(private readonly child: ChildProcess) {
    super();
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => this.receive(chunk));
    child.on("exit", () => this.close(new RpcClosedError("The Flowbaby bridge exited")));
    child.stdin!.on("error", () => undefined);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  request(method: string, params: JsonObject | undefined, timeoutMs: number): Promise<JsonObject> {
    if (this.closed) {
      return Promise.reject(new RpcClosedError("The Flowbaby bridge is not running"));
    }
    const id = this.nextId++;
    const message: JsonObject = { jsonrpc: "2.0", id, method };
    if (params !== undefined) {
      message.params = params;
    }
    return new Promise<JsonObject>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RpcTimeoutError(`${method} got no reply within ${Math.round(timeoutMs / 1000)}s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.child.stdin!.write(JSON.stringify(message) + "\n");
    });
  }

  close(error: Error = new RpcClosedError("The Flowbaby bridge connection closed")): void {
    if (this.closed) {
      return;
    }
    this.closed = true;
    for (const [id, call] of this.pending) {
      clearTimeout(call.timer);
      call.reject(error);
      this.pending.delete(id);
    }
    this.emit("closed");
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (line) {
        this.dispatch(line);
      }
    }
  }

  private dispatch(line: string): void {
    let message: JsonObject;
    try {
      message = JSON.parse(line) as JsonObject;
    } catch {
      this.emit("garbage", line);
      return;
    }
    if (typeof message.method === "string" && !("id" in message)) {
      this.emit("notification", message.method, message.params ?? {});
      return;
    }
    const call = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (!call) {
      return;
    }
    this.pending.delete(message.id as number);
    clearTimeout(call.timer);
    if (message.error && typeof message.error === "object") {
      const error = message.error as JsonObject;
      call.reject(new RpcProtocolError(Number(error.code), String(error.message)));
    } else {
      call.resolve((message.result ?? {}) as JsonObject);
    }
  }
}
