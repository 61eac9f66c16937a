// Small DOM helpers for the workbench.
//
// Every piece of text goes in through text nodes or textContent: plugin text is data, never markup.
// The page runs under `require-trusted-types-for 'script'`, so an innerHTML assignment would throw.

const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "indeterminate"]);

// el("p", {class: "x", testid: "y", text: "..."}, child, "text", [more]) builds one element.
// Attributes named on* add listeners; `dataset` merges data-* attributes; `testid` sets data-testid.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key === "dataset") {
      for (const [name, data] of Object.entries(value)) {
        if (data !== undefined && data !== null) node.dataset[name] = String(data);
      }
    } else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (PROPERTIES.has(key)) node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

// Runs `then` once `ms` passed (with no string a timer could evaluate).
export function after(ms, then) {
  AbortSignal.timeout(ms).addEventListener("abort", then, { once: true });
}

// Appends children; strings become text nodes, null/false are skipped, arrays are flattened.
export function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

let counter = 0;

// A document-unique id for label/aria wiring.
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

// A JSON value as readable text: strings as they are, everything else as JSON.
export function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

// Pretty JSON for <pre> blocks.
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

// Deep equality of JSON values (for matching defaults against option values).
export function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
