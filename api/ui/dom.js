// Small DOM helpers every view uses. Imports nothing.

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

/** A field's text as the page's own: `code` and **bold** (the markdown memories carry) become
 * <code> and <strong> built as elements, everything else stays text (nothing is parsed as HTML). */
export function inline(text) {
  const parts = [];
  for (const piece of String(text ?? "").split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/)) {
    if (!piece) continue;
    if (piece.length > 2 && piece.startsWith("`") && piece.endsWith("`")) parts.push(el("code", {}, piece.slice(1, -1)));
    else if (piece.length > 4 && piece.startsWith("**") && piece.endsWith("**")) parts.push(el("strong", {}, piece.slice(2, -2)));
    else parts.push(piece);
  }
  return parts;
}
