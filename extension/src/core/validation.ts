/**
 * `validateIngestRequest`: the docs' pre-flight check of a FlowbabyIngestRequest, with the
 * bridge's rules and messages (INGEST_CONTRACT.md 3.2 and 8), every faulty field listed.
 * The bridge stays the authority: the commands always forward to it.
 */

export const MAX_PAYLOAD_CHARS = 100_000;
const MAX_ID_CHARS = 256;
const LIST_FIELDS = ["decisions", "rationale", "openQuestions", "nextSteps", "references"] as const;
const STATUSES = ["Active", "Superseded", "DecisionRecord"];

export interface FieldError {
  field: string;
  message: string;
}

export interface ValidationResult {
  valid: boolean;
  /** One message per fault, in field order (the bridge's `error` is the first). */
  errors: string[];
  /** Sorted dotted paths of every faulty field, as the bridge's `fields`. */
  fields: string[];
  details: FieldError[];
}

const DATE = String.raw`(\d{4})-?(\d{2})-?(\d{2})|\d{4}-?W\d{2}(?:-?[1-7])?`;
const TIME = String.raw`\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?`;
const ZONE = String.raw`Z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?`;
const ISO = new RegExp(`^(?:${DATE})(?:[T ](${TIME})(${ZONE})?)?$`);

/** Roughly Python 3.11's `datetime.fromisoformat`, which the bridge uses. */
export function isIsoTimestamp(value: string): boolean {
  const text = value.trim();
  const match = ISO.exec(text);
  if (!match) {
    return false;
  }
  if (match[1]) {
    const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const date = new Date(Date.UTC(year, month - 1, day));
    if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || year < 1) {
      return false;
    }
  }
  if (match[4]) {
    const digits = match[4].replace(/[:.,]/g, "");
    const [hour, minute, second] = [Number(digits.slice(0, 2)), Number(digits.slice(2, 4) || 0), Number(digits.slice(4, 6) || 0)];
    if (hour > 23 || minute > 59 || second > 59) {
      return false;
    }
  }
  return true;
}

function hasLoneSurrogate(text: string): boolean {
  return /(?:[\uD800-\uDBFF](?![\uDC00-\uDFFF]))|(?:(?<![\uD800-\uDBFF])[\uDC00-\uDFFF])/.test(text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function codePoints(text: string): number {
  return Array.from(text).length;
}

export function validateIngestRequest(payload: unknown): ValidationResult {
  const details: FieldError[] = [];
  const fail = (field: string, message: string) => details.push({ field, message: `Field "${field}" ${message}` });
  if (!isObject(payload)) {
    fail("params", "must be an object");
    return finish(details);
  }
  for (const name of ["topic", "context"]) {
    const value = payload[name];
    if (value === undefined) {
      fail(name, "is required and must be a non-empty string");
    } else if (typeof value !== "string" || !value.trim()) {
      fail(name, "must be a non-empty string");
    }
  }
  for (const name of LIST_FIELDS) {
    const value = payload[name];
    if (value === undefined) {
      continue;
    }
    if (!Array.isArray(value)) {
      fail(name, "must be an array of strings");
      continue;
    }
    value.forEach((item, index) => {
      if (typeof item !== "string") {
        fail(`${name}.${index}`, "must be a non-empty string");
      }
    });
  }
  if (payload.timeScope !== undefined && payload.timeScope !== null && typeof payload.timeScope !== "string") {
    fail("timeScope", "must be a non-empty string");
  }
  optionalId(payload, "agentName", "agentName", fail);
  // Absent or null metadata fields are filled in by the service (INGEST_CONTRACT.md 3.2), as for storeMemory.
  const metadata = payload.metadata ?? {};
  if (!isObject(metadata)) {
    fail("metadata", "must be an object");
  } else {
    const topicId = metadata.topicId;
    if (topicId === undefined || topicId === null || topicId === "") {
      // generated
    } else if (typeof topicId !== "string") {
      fail("metadata.topicId", "must be a non-empty string");
    } else if (topicId.length > MAX_ID_CHARS) {
      fail("metadata.topicId", `must be at most ${MAX_ID_CHARS} characters`);
    } else if (!topicId.trim()) {
      fail("metadata.topicId", "must be a non-empty string");
    }
    for (const name of ["createdAt", "updatedAt"]) {
      const value = metadata[name];
      if (value === undefined || value === null) {
        continue; // now (updatedAt: createdAt)
      } else if (typeof value !== "string") {
        fail(`metadata.${name}`, "must be a non-empty string");
      } else if (!isIsoTimestamp(value)) {
        fail(`metadata.${name}`, "must be an ISO-8601 timestamp");
      }
    }
    optionalId(metadata, "sessionId", "metadata.sessionId", fail);
    optionalId(metadata, "planId", "metadata.planId", fail);
    if (metadata.status !== undefined && metadata.status !== null && !STATUSES.includes(metadata.status as string)) {
      fail("metadata.status", `must be one of ${STATUSES.join(", ")}`);
    }
  }
  if (details.length === 0) {
    const surrogate = firstLoneSurrogate(payload);
    if (surrogate) {
      fail(surrogate, "must be valid UTF-8 text (no lone surrogates)");
    } else {
      const size = payloadChars(payload);
      if (size > MAX_PAYLOAD_CHARS) {
        fail("payload", `is ${size} characters; the limit is ${MAX_PAYLOAD_CHARS}`);
      }
    }
  }
  return finish(details);
}

function optionalId(
  source: Record<string, unknown>,
  key: string,
  field: string,
  fail: (field: string, message: string) => void,
): void {
  const value = source[key];
  if (value === undefined || value === null) {
    return;
  }
  if (typeof value !== "string") {
    fail(field, "must be a non-empty string");
  } else if (value.length > MAX_ID_CHARS) {
    fail(field, `must be at most ${MAX_ID_CHARS} characters`);
  }
}

/** The fields the contract reads, in document order, as the bridge checks them. */
function firstLoneSurrogate(payload: Record<string, unknown>): string | undefined {
  const check = (value: unknown, path: string): string | undefined =>
    typeof value === "string" && hasLoneSurrogate(value) ? path : undefined;
  for (const name of ["topic", "context"]) {
    const found = check(payload[name], name);
    if (found) return found;
  }
  for (const name of LIST_FIELDS) {
    const items = (payload[name] as unknown[] | undefined) ?? [];
    for (let index = 0; index < items.length; index++) {
      const found = check(items[index], `${name}.${index}`);
      if (found) return found;
    }
  }
  for (const name of ["timeScope", "agentName"]) {
    const found = check(payload[name], name);
    if (found) return found;
  }
  const metadata = payload.metadata as Record<string, unknown>;
  for (const name of ["topicId", "createdAt", "updatedAt", "sessionId", "planId", "status"]) {
    const found = check(metadata[name], `metadata.${name}`);
    if (found) return found;
  }
  return undefined;
}

function payloadChars(payload: Record<string, unknown>): number {
  let total = codePoints(payload.topic as string) + codePoints(payload.context as string);
  total += typeof payload.timeScope === "string" ? codePoints(payload.timeScope) : 0;
  for (const name of LIST_FIELDS) {
    for (const item of (payload[name] as string[] | undefined) ?? []) {
      total += codePoints(item);
    }
  }
  return total;
}

function finish(details: FieldError[]): ValidationResult {
  return {
    valid: details.length === 0,
    errors: details.map((detail) => detail.message),
    fields: [...new Set(details.map((detail) => detail.field))].sort(),
    details,
  };
}
