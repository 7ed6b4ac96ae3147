/** The retrieval throttle on its own, with a controllable clock. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_QUEUED, RetrievalThrottle, ThrottleRefusal } from "../src/core/throttle";
import { isIsoTimestamp } from "../src/core/validation";

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe("RetrievalThrottle", () => {
  it("defaults to 10 per minute and 2 running, and clamps to 30 and 5", () => {
    assert.deepEqual(new RetrievalThrottle().limits, { ratePerMinute: 10, maxConcurrent: 2, maxQueued: 5 });
    assert.deepEqual(new RetrievalThrottle({ rateLimitPerMinute: 100, maxConcurrentRequests: 9 }).limits, {
      ratePerMinute: 30,
      maxConcurrent: 5,
      maxQueued: MAX_QUEUED,
    });
    assert.equal(new RetrievalThrottle({ rateLimitPerMinute: 0 }).limits.ratePerMinute, 1);
  });

  it("refuses past the per-minute rate with RATE_LIMIT_EXCEEDED and frees up after the window", async () => {
    let now = 1_000_000;
    const throttle = new RetrievalThrottle({ rateLimitPerMinute: 3 }, () => now);
    for (let i = 0; i < 3; i++) {
      assert.equal(await throttle.run(async () => "ok"), "ok");
      now += 1_000;
    }
    const refused = (await throttle.run(async () => "ok")) as ThrottleRefusal;
    assert.equal(refused.errorCode, "RATE_LIMIT_EXCEEDED");
    assert.equal(refused.retryAfterSec, 58);
    assert.equal(refused.message, "429_AGENT_THROTTLED: at most 3 retrievals per minute; retry in 58s");
    now += 57_001;
    assert.equal(await throttle.run(async () => "ok"), "ok");
  });

  it("runs 2 at once, queues 5 and refuses the 8th with QUEUE_FULL", async () => {
    const throttle = new RetrievalThrottle({ rateLimitPerMinute: 30 });
    const release = gate();
    let running = 0;
    let peak = 0;
    const work = async () => {
      running += 1;
      peak = Math.max(peak, running);
      await release.opened;
      running -= 1;
      return "done";
    };
    const admitted = Array.from({ length: 7 }, () => throttle.run(work));
    const refused = (await throttle.run(work)) as ThrottleRefusal;
    assert.equal(refused.errorCode, "QUEUE_FULL");
    assert.equal(refused.retryAfterSec, 1);
    assert.match(refused.message, /^429_AGENT_THROTTLED: 2 retrievals running and 5 waiting; retry shortly$/);
    release.open();
    assert.deepEqual(await Promise.all(admitted), Array(7).fill("done"));
    assert.equal(peak, 2);
  });

  it("does not count refused calls toward the rate", async () => {
    let now = 0;
    const throttle = new RetrievalThrottle({ rateLimitPerMinute: 1 }, () => now);
    assert.equal(await throttle.run(async () => 1), 1);
    now = 30_000;
    assert.equal(((await throttle.run(async () => 1)) as ThrottleRefusal).retryAfterSec, 31);
    now = 60_000;
    assert.equal(await throttle.run(async () => 1), 1);
  });
});

describe("isIsoTimestamp (Python 3.11 fromisoformat forms)", () => {
  it("accepts what the bridge accepts and rejects the rest", () => {
    for (const good of ["2025-03-01", "2025-03-01T10:00:00Z", "2025-03-01 10:00", "20250301T100000Z", "2025-W09-6", "2025-03-01T10:00:00.123456789+02:00"]) {
      assert.equal(isIsoTimestamp(good), true, good);
    }
    for (const bad of ["yesterday", "2025-02-30", "2025-03-01T25:00", "03/01/2025", ""]) {
      assert.equal(isIsoTimestamp(bad), false, bad);
    }
  });
});
