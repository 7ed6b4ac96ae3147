/**
 * The documented retrieval throttle (`flowbabyMemory.agentAccess.*`): at most N retrievals start
 * per sliding minute (default 10, clamped to 30) and M run at once (default 2, clamped to 5) with
 * up to 5 waiting. Refusals are answered like the bridge's own (INGEST_CONTRACT.md 3.5, 5.2).
 */

export const DEFAULT_RATE_PER_MINUTE = 10;
export const MAX_RATE_PER_MINUTE = 30;
export const DEFAULT_MAX_CONCURRENT = 2;
export const MAX_CONCURRENT = 5;
export const MAX_QUEUED = 5;
const WINDOW_MS = 60_000;

export interface ThrottleRefusal {
  success: false;
  error: "RATE_LIMIT_EXCEEDED" | "QUEUE_FULL";
  errorCode: "RATE_LIMIT_EXCEEDED" | "QUEUE_FULL";
  message: string;
  retryAfterSec: number;
}

export interface ThrottleSettings {
  rateLimitPerMinute?: number;
  maxConcurrentRequests?: number;
}

function clampInt(value: number | undefined, fallback: number, max: number): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return fallback;
  }
  return Math.min(max, Math.max(1, Math.floor(value)));
}

export class RetrievalThrottle {
  private admissions: number[] = [];
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private rate: number;
  private concurrency: number;

  constructor(
    settings: ThrottleSettings = {},
    private readonly now: () => number = Date.now,
  ) {
    this.rate = DEFAULT_RATE_PER_MINUTE;
    this.concurrency = DEFAULT_MAX_CONCURRENT;
    this.configure(settings);
  }

  /** Applies changed settings; calls already admitted keep running. */
  configure(settings: ThrottleSettings): void {
    this.rate = clampInt(settings.rateLimitPerMinute, DEFAULT_RATE_PER_MINUTE, MAX_RATE_PER_MINUTE);
    this.concurrency = clampInt(settings.maxConcurrentRequests, DEFAULT_MAX_CONCURRENT, MAX_CONCURRENT);
    this.pump();
  }

  get limits(): { ratePerMinute: number; maxConcurrent: number; maxQueued: number } {
    return { ratePerMinute: this.rate, maxConcurrent: this.concurrency, maxQueued: MAX_QUEUED };
  }

  /** Runs `work` when admitted, or returns the refusal without running it. */
  async run<T>(work: () => Promise<T>): Promise<T | ThrottleRefusal> {
    if (this.running + this.waiting.length >= this.concurrency + MAX_QUEUED) {
      return {
        success: false,
        error: "QUEUE_FULL",
        errorCode: "QUEUE_FULL",
        message: `429_AGENT_THROTTLED: ${this.running} retrievals running and ${this.waiting.length} waiting; retry shortly`,
        retryAfterSec: 1,
      };
    }
    const now = this.now();
    this.admissions = this.admissions.filter((at) => now - at < WINDOW_MS);
    if (this.admissions.length >= this.rate) {
      const retryAfterSec = Math.max(1, Math.floor((this.admissions[0] + WINDOW_MS - now) / 1000) + 1);
      return {
        success: false,
        error: "RATE_LIMIT_EXCEEDED",
        errorCode: "RATE_LIMIT_EXCEEDED",
        message: `429_AGENT_THROTTLED: at most ${this.rate} retrievals per minute; retry in ${retryAfterSec}s`,
        retryAfterSec,
      };
    }
    this.admissions.push(now);
    if (this.running >= this.concurrency) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await work();
    } finally {
      this.running -= 1;
      this.pump();
    }
  }

  private pump(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      this.running += 1;
      this.waiting.shift()!();
    }
  }
}

export function isThrottleRefusal(value: unknown): value is ThrottleRefusal {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as ThrottleRefusal).success === false &&
    ((value as ThrottleRefusal).errorCode === "RATE_LIMIT_EXCEEDED" || (value as ThrottleRefusal).errorCode === "QUEUE_FULL")
  );
}
