// Flowbaby memory browser: the router, the API client and sign-in. Plain ES modules, no build step.
import { views } from "./views.js";

const state = { session: null, key: null, namespace: null, own: null, who: null };
// The session's key goes with every request besides the cookie (cookies reach every port of this
// host; the key stays in this origin's storage). Inside VS Code the page keeps both in memory only.
const KEY_ITEM = `flowbaby.sessionKey:${new URL(".", document.baseURI).pathname}`;

function keepKey(key) {
  state.key = key || null;
  if (state.embedded) return;
  try {
    if (key) localStorage.setItem(KEY_ITEM, key);
    else localStorage.removeItem(KEY_ITEM);
  } catch { /* storage refused: the key lives as long as this page */ }
}
export const timings = (window.__flowbabyTimings = window.__flowbabyTimings || {});

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
    showSignin("Your browser session ended; sign in again.");
    throw new ApiError(401, data);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  Object.defineProperty(data, "__answeredAt", { value: answered, enumerable: false });
  Object.defineProperty(data, "__serverMs", { value: answered - started, enumerable: false });
  return data;
}

/** Build an element: el("a", {href: "#"}, "text", child). Text is always set as text (no HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function announce(text) {
  const region = document.getElementById("announce");
  region.textContent = "";
  setTimeout(() => { region.textContent = text; }, 30);
}

/** A modal confirmation; resolves true only on "Confirm". */
export function confirmAction(title, text, okLabel = "Confirm") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
  });
}

export function failure(error) {
  const code = error.body && error.body.errorCode ? `${error.body.errorCode}: ` : "";
  return el("p", { class: "error", role: "alert" }, `${code}${error.message}`);
}

/** Download `data` as a JSON file (the page's export). */
export function download(name, data) {
  const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
  const link = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(link);
  link.click();
  setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, search] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] || "search", args: parts.slice(1), params: new URLSearchParams(search || "") };
}

export function go(view, args = [], params = {}) {
  const query = new URLSearchParams(params).toString();
  const hash = `#/${[view, ...args].map(encodeURIComponent).join("/")}${query ? "?" + query : ""}`;
  if (location.hash === hash) route();
  else location.hash = hash;
}

let current = null;
let routed = false;
async function route() {
  const { view, args, params } = parseHash();
  if (view === "signin") return showSignin("");
  if (!state.who) return;
  const render = views[view] || views.search;
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.view === (view === "memory" ? "memories" : view)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (current && current.stop) current.stop();
  const main = document.getElementById("main");
  main.replaceChildren();
  current = (await render(main, args, params)) || null;
  // Keyboard users continue from the new view, not from where the old one was removed.
  if (routed && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
  routed = true;
  document.title = `${main.querySelector("h2")?.textContent || "Flowbaby"} · Flowbaby memory browser`;
}

function showSignin(note) {
  state.who = null;
  document.getElementById("who").textContent = "";
  document.getElementById("signout").hidden = true;
  const main = document.getElementById("main");
  const message = el("p", { class: "error", role: "alert" });
  const token = el("input", { type: "password", id: "signin-token", autocomplete: "off", required: true });
  const form = el("form", { class: "signin", onsubmit: async (event) => {
    event.preventDefault();
    try {
      await signIn({ token: token.value });
      go("search");
    } catch (error) {
      message.textContent = error.message;
    }
  } },
  el("h2", {}, "Sign in"),
  el("p", {}, "Run ", el("code", {}, "flowbaby ui"), " in the workspace for a one-time sign-in link. On a team server, sign in with your own token:"),
  note ? el("p", { class: "muted" }, note) : null,
  el("label", { for: "signin-token" }, "Your flowbaby token"), token,
  el("p", {}, el("button", { class: "primary", type: "submit" }, "Sign in")),
  message);
  main.replaceChildren(form);
  document.title = "Sign in · Flowbaby memory browser";
}

async function signIn(body) {
  const who = await api("/ui/signin", { method: "POST", body: { ...body, embedded: !!state.embedded } });
  if (who.session) state.session = who.session;
  keepKey(who.sessionKey);
  adopt(who);
}

function adopt(who) {
  state.who = who;
  state.own = who.namespace;
  const allowed = who.namespaces;
  state.namespace = !allowed || allowed.includes(who.namespace) ? who.namespace : allowed[0];
  const name = who.user ? `${who.user} · ` : "";
  document.getElementById("who").textContent = `${name}${state.namespace || "this workspace"}`;
  document.getElementById("signout").hidden = false;
}

async function start() {
  timings.start = performance.now();
  document.getElementById("signout").addEventListener("click", async () => {
    await api("/ui/signout", { method: "POST", body: {} }).catch(() => null);
    state.session = null;
    keepKey(null);
    showSignin("Signed out.");
  });
  const { view, params } = parseHash();
  state.embedded = new URLSearchParams(location.search).get("embedded") === "1";
  if (params.get("code")) {  // the one-time link (`flowbaby ui`) or the VS Code webview: redeemed here by POST
    const code = params.get("code");
    history.replaceState(null, "", `${location.pathname}${location.search}#/${view === "signin" ? "search" : view}`);
    try { await signIn({ code }); } catch { return showSignin("That sign-in link is used up or expired."); }
  } else {
    if (!state.embedded) {
      try { state.key = localStorage.getItem(KEY_ITEM); } catch { state.key = null; }
    }
    const who = await api("/ui/session");
    if (!who.signedIn) return showSignin("");
    adopt(who);
  }
  window.addEventListener("hashchange", route);
  await route();
}

start();
