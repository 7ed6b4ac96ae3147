// The API client and the browser session it carries. Imports nothing: the views and the page
// (app.js) both use it, and app.js says what to do when the session ends (whenSessionEnds).
export const state = { session: null, key: null, namespace: null, own: null, who: null };
// The session's key goes with every request besides the cookie (cookies reach every port of this
// host; the key stays in this origin's storage). Inside VS Code the page keeps both in memory only.
export const KEY_ITEM = `flowbaby.sessionKey:${new URL(".", document.baseURI).pathname}`;

export function keepKey(key) {
  state.key = key || null;
  if (state.embedded) return;
  try {
    if (key) localStorage.setItem(KEY_ITEM, key);
    else localStorage.removeItem(KEY_ITEM);
  } catch { /* storage refused: the key lives as long as this page */ }
}
export const timings = (window.__flowbabyTimings = window.__flowbabyTimings || {});

let sessionEnded = () => {};

/** What to do when the server ends the session (a 401): app.js shows the sign-in. */
export function whenSessionEnds(handler) {
  sessionEnded = handler;
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.error || body.message)) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

/** Call the server's API with the browser session (cookie, or a header inside VS Code). */
export async function api(path, { method = "GET", body, query } = {}) {
  const url = new URL(path.replace(/^\//, ""), document.baseURI);  // relative: works behind a path prefix too
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const headers = { "X-Flowbaby-Browser": "1", Accept: "application/json" };
  if (state.session) headers["X-Flowbaby-Session"] = state.session;
  if (state.key) headers["X-Flowbaby-Session-Key"] = state.key;
  if (state.namespace && state.namespace !== state.own) headers["X-Flowbaby-Namespace"] = state.namespace;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const started = performance.now();
  const res = await fetch(url, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answered = performance.now();
  const data = await res.json().catch(() => null);
  if (res.status === 401 && !path.startsWith("/ui/")) {
    keepKey(null);
    sessionEnded();
    throw new ApiError(401, data);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  Object.defineProperty(data, "__answeredAt", { value: answered, enumerable: false });
  Object.defineProperty(data, "__serverMs", { value: answered - started, enumerable: false });
  return data;
}

