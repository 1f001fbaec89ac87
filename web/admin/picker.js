// The parent picker: a combobox (WAI-ARIA 1.2, list autocomplete) that
// searches the resource by name and by code as one types, and a button
// that makes the record a root. The server checks the choice (a parent
// that does not exist, the record itself, one of its descendants) and
// its message shows beside the picker.

import * as client from "./client.js";
import { h, fill, uid, debounce } from "./dom.js";
import { label } from "./model.js";

const SHOWN = 10;

// parentPicker returns {el, get(), set(id, row), error(msgs), focus()} for
// res's parent field, starting at the record parent (an id or null) whose
// row is parentRow when known.
export function parentPicker(res, field, parent, parentRow) {
  const id = uid("picker");
  const listId = `${id}-list`;
  const nowId = `${id}-now`;
  const errorId = `${id}-error`;
  let value = parent;
  let options = []; // rows shown
  let activeIndex = -1;
  let seq = 0;

  const now = h("p", { class: "picker-now", id: nowId });
  const error = h("p", { class: "field-error", id: errorId, hidden: true });
  const list = h("ul", { class: "listbox", role: "listbox", id: listId, "aria-label": `Choose the ${field.label.toLowerCase()}`, hidden: true });
  const found = h("p", { class: "sr-only", role: "status" });
  const input = h("input", {
    id, type: "text", role: "combobox", autocomplete: "off",
    "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": listId,
    "aria-describedby": nowId, placeholder: "Type a name or code",
    oninput: debounce(search, 250),
    onkeydown: onKey,
    // A click on an option keeps the focus here (its mousedown is
    // cancelled), so leaving the input means leaving the list.
    onblur: close,
  });
  const clear = h("button", { type: "button", class: "link", onclick: () => { choose(null); input.focus(); } }, `No ${field.label.toLowerCase()} (a root)`);
  const el = h("div", { class: "field picker", "data-field": field.key },
    h("label", { for: id }, field.label),
    now,
    h("div", { class: "combo" }, input, list),
    clear,
    found,
    error);

  function showNow(row) {
    if (value === null) fill(now, "Now: none (a root)");
    else fill(now, "Now: ", row ? label(res, row) : `#${value}`);
  }
  showNow(parentRow);

  async function search() {
    const text = input.value.trim();
    const mine = ++seq;
    if (!text) {
      close();
      return;
    }
    const query = (param) => client.send("GET", res.collection, { query: { [param]: text, page_size: SHOWN, ordering: res.nameKey } })
      .then((r) => r.data.data, () => []);
    const [byName, byCode] = await Promise.all([query(`${res.nameKey}_icontains`), query(`${res.code}_icontains`)]);
    if (mine !== seq) return;
    const seen = new Set();
    options = [...byCode, ...byName].filter((row) => !seen.has(row.id) && seen.add(row.id)).slice(0, SHOWN);
    activeIndex = -1;
    fill(list, options.length
      ? options.map((row, i) => h("li", {
        role: "option", id: `${id}-opt-${i}`, "aria-selected": "false",
        onmousedown: (e) => e.preventDefault(), // keep focus in the input
        onclick: () => choose(row),
      }, label(res, row)))
      : h("li", { class: "none", role: "option", "aria-disabled": "true", "aria-selected": "false" }, "No match"));
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    fill(found, options.length ? `${options.length} found` : "No match");
  }

  function close() {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    activeIndex = -1;
  }

  function highlight(i) {
    const items = list.querySelectorAll("[role=option]");
    items.forEach((li, j) => li.setAttribute("aria-selected", j === i ? "true" : "false"));
    activeIndex = i;
    if (items[i]) {
      input.setAttribute("aria-activedescendant", items[i].id);
      items[i].scrollIntoView({ block: "nearest" });
    }
  }

  function onKey(e) {
    if (list.hidden || !options.length) {
      if (e.key === "Enter") e.preventDefault(); // never submits the form
      return;
    }
    switch (e.key) {
      case "ArrowDown":
        highlight(Math.min(options.length - 1, activeIndex + 1));
        break;
      case "ArrowUp":
        highlight(Math.max(0, activeIndex - 1));
        break;
      case "Enter":
        if (activeIndex >= 0) choose(options[activeIndex]);
        break;
      case "Escape":
        close();
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  function choose(row) {
    value = row ? row.id : null;
    showNow(row);
    input.value = "";
    close();
    fill(found, row ? `Chosen: ${label(res, row)}` : "Chosen: none");
  }

  return {
    el,
    get: () => value,
    set: (v, row) => { value = v; showNow(row); },
    error(msgs) {
      const on = Boolean(msgs && msgs.length);
      error.hidden = !on;
      fill(error, on ? msgs.join(" ") : "");
      if (on) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", `${nowId} ${errorId}`);
      } else {
        input.removeAttribute("aria-invalid");
        input.setAttribute("aria-describedby", nowId);
      }
    },
    focus: () => input.focus(),
  };
}
