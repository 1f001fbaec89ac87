// Building the page. Every value from the service becomes a text node (or
// textContent, or an attribute set with setAttribute): nothing from the
// data is ever parsed as HTML, so a name like <img src=x onerror=...>
// shows those characters and runs nothing. No module of the UI uses
// innerHTML.

// Properties set as DOM properties rather than attributes.
const PROPS = new Set(["value", "checked", "disabled", "hidden", "selected", "tabIndex", "textContent", "htmlFor"]);

// h creates an element. props: "class", "on<event>" listeners, the names
// in PROPS, and attributes (strings; true for an empty one). undefined,
// null and false leave a prop out. Children are nodes, strings (made text
// nodes), or arrays of them; null and false are skipped.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === "class") {
      el.className = Array.isArray(v) ? v.filter(Boolean).join(" ") : v;
    } else if (PROPS.has(k)) {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children to el as h does.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

let counter = 0;

// uid returns an id unique in the page, for label/for and aria links.
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

// humanize turns a key into a label as Django REST Framework does for its
// forms: "dept_code" is "Dept code", "leave-types" is "Leave types".
export function humanize(key) {
  const s = String(key).replace(/[_-]+/g, " ").trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// debounce calls fn once calls have paused for ms.
export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// srOnly is text for screen readers only.
export function srOnly(text) {
  return h("span", { class: "sr-only" }, text);
}
