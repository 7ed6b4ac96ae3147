// Flowbaby memory browser: the page (routing, sign-in, start). Plain ES modules, no build step.
// The one-way imports: app.js -> views.js -> graph.js, and both -> session.js, dom.js, nav.js,
// which import nothing (tests/unit/api/test_browser_ui_imports.py fails on a cycle).
import { el } from "./dom.js";
import { go, parseHash, setRouter } from "./nav.js";
import { KEY_ITEM, api, keepKey, state, timings, whenSessionEnds } from "./session.js";
import { views } from "./views.js";

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

setRouter(route);
whenSessionEnds(() => showSignin("Your browser session ended; sign in again."));
start();
