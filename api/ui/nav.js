// The hash route: read it, and go to a view. Imports nothing: app.js says how to render (setRouter).
let router = () => {};

/** app.js's route(): called when go() names the view already shown. */
export function setRouter(render) {
  router = render;
}

export function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, search] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] || "search", args: parts.slice(1), params: new URLSearchParams(search || "") };
}

export function go(view, args = [], params = {}) {
  const query = new URLSearchParams(params).toString();
  const hash = `#/${[view, ...args].map(encodeURIComponent).join("/")}${query ? "?" + query : ""}`;
  if (location.hash === hash) router();
  else location.hash = hash;
}
