// Pickers of records: a combobox (WAI-ARIA 1.2, list autocomplete) that
// searches a resource by name and by code as one types. Three uses:
//
//   - the parent of a hierarchical record, with a button that makes it a
//     root;
//   - a reference (a ref field): one record of the resource it refers to,
//     with a button that clears it when the field is optional;
//   - a list of references (a refs field): the chosen records as chips,
//     each with its remove button; choosing another adds it;
//   - the table's filters of a reference (refFilter): a record, or a list
//     of them, whose ids are the filter's value.
//
// The server checks the choice (a record that does not exist, a parent
// that is the record itself or one of its descendants) and its message
// shows beside the picker.

import * as client from "./client.js";
import { h, fill, uid, debounce } from "./dom.js";
import { label } from "./model.js";

const SHOWN = 10;

// searchBox is the combobox itself: an input and its list of matches of
// target, calling choose(row) when one is chosen.
function searchBox(target, field, id, describedBy, choose) {
  const listId = `${id}-list`;
  let options = []; // rows shown
  let activeIndex = -1;
  let seq = 0;
  const list = h("ul", { class: "listbox", role: "listbox", id: listId, "aria-label": `Choose the ${(field.what || field.label).toLowerCase()}`, hidden: true });
  const found = h("p", { class: "sr-only", role: "status" });
  const input = h("input", {
    id, type: "text", role: "combobox", autocomplete: "off",
    "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": listId,
    "aria-describedby": describedBy, placeholder: "Type a name or code",
    oninput: debounce(search, 250),
    onkeydown: onKey,
    // A click on an option keeps the focus here (its mousedown is
    // cancelled), so leaving the input means leaving the list.
    onblur: close,
  });
  if (field.required) input.setAttribute("aria-required", "true");

  async function search() {
    const text = input.value.trim();
    const mine = ++seq;
    if (!text) {
      close();
      return;
    }
    const query = (param) => client.send("GET", target.collection, { query: { [param]: text, page_size: SHOWN, ordering: target.nameKey } })
      .then((r) => r.data.data, () => []);
    const [byName, byCode] = await Promise.all([query(`${target.nameKey}_icontains`), query(`${target.code}_icontains`)]);
    if (mine !== seq) return;
    const seen = new Set();
    options = [...byCode, ...byName].filter((row) => !seen.has(row.id) && seen.add(row.id)).slice(0, SHOWN);
    activeIndex = -1;
    fill(list, options.length
      ? options.map((row, i) => h("li", {
        role: "option", id: `${id}-opt-${i}`, "aria-selected": "false",
        onmousedown: (e) => e.preventDefault(), // keep focus in the input
        onclick: () => pick(row),
      }, label(target, row)))
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
        if (activeIndex >= 0) pick(options[activeIndex]);
        break;
      case "Escape":
        close();
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  function pick(row) {
    input.value = "";
    close();
    choose(row);
    fill(found, row ? `Chosen: ${label(target, row)}` : "Chosen: none");
  }

  return { input, list, found, pick };
}

// errorOf returns the error paragraph of a picker and the function that
// shows messages in it, marking input.
function errorOf(input, id, describedBy) {
  const errorId = `${id}-error`;
  const error = h("p", { class: "field-error", id: errorId, hidden: true });
  return {
    error,
    show(msgs) {
      const on = Boolean(msgs && msgs.length);
      error.hidden = !on;
      fill(error, on ? [].concat(msgs).join(" ") : "");
      if (on) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", `${describedBy} ${errorId}`);
      } else {
        input.removeAttribute("aria-invalid");
        input.setAttribute("aria-describedby", describedBy);
      }
    },
  };
}

function labelOf(id, field) {
  return h("label", { for: id }, field.label, field.required && h("span", { class: "req", "aria-hidden": "true" }, " *"));
}

// onePicker returns {el, get(), set(id, row), error(msgs), focus()} for a
// field holding one record of target (an id or null), starting at value
// whose row is row when known. clearText is the button that empties it
// (none when the field must have a record), noneText what an empty one
// shows; onChange(id) hears every choice.
function onePicker(target, field, value, row, clearText, noneText, onChange = () => {}) {
  const id = uid("picker");
  const nowId = `${id}-now`;
  const now = h("p", { class: "picker-now", id: nowId });
  const box = searchBox(target, field, id, nowId, (chosen) => {
    value = chosen ? chosen.id : null;
    showNow(chosen);
    onChange(value);
  });
  const err = errorOf(box.input, id, nowId);
  const clear = clearText && h("button", { type: "button", class: "link", onclick: () => { box.pick(null); box.input.focus(); } }, clearText);
  const el = h("div", { class: "field picker", "data-field": field.key },
    labelOf(id, field), now, h("div", { class: "combo" }, box.input, box.list), clear, box.found, err.error);

  function showNow(r) {
    if (value === null || value === undefined) fill(now, `Now: ${noneText}`);
    else fill(now, "Now: ", r ? label(target, r) : `#${value}`);
  }
  showNow(row);

  return {
    el,
    get: () => value ?? null,
    set: (v, r) => { value = v; showNow(r); },
    error: err.show,
    focus: () => box.input.focus(),
  };
}

// parentPicker is the picker of res's parent field, starting at parent (an
// id or null) whose row is parentRow when known.
export function parentPicker(res, field, parent, parentRow) {
  const lower = field.label.toLowerCase();
  return onePicker(res, field, parent, parentRow, `No ${lower} (a root)`, "none (a root)");
}

// refPicker is the picker of a ref field, starting at value (an id or
// null) whose record is row when known.
export function refPicker(field, value, row) {
  const clear = field.required ? null : `No ${field.label.toLowerCase()}`;
  return onePicker(field.target, field, value, row, clear, "none");
}

// refsPicker returns {el, get(), know(row), error(msgs), focus()} for a
// refs field: the chosen records as chips with remove buttons, and the
// combobox that adds one. ids are the field's ids, rows their records when
// known (by id); know(row) names a chosen id later. get() returns the
// ids, ascending, as the service shows them; onChange(ids) hears every
// change.
export function refsPicker(field, ids, rows, onChange = () => {}) {
  const target = field.target;
  const id = uid("picker");
  const chipsId = `${id}-chips`;
  const chosen = new Map((ids || []).map((i) => [i, (rows && rows.get(i)) || null]));
  const chips = h("ul", { class: "chips", id: chipsId, "aria-label": `Chosen ${(field.what || field.label).toLowerCase()}` });
  const status = h("p", { class: "sr-only", role: "status" });
  const box = searchBox(target, field, id, chipsId, (row) => {
    if (!row) return;
    chosen.set(row.id, row);
    draw();
    fill(status, `Added ${label(target, row)}.`);
    onChange(get());
  });
  const err = errorOf(box.input, id, chipsId);
  const el = h("div", { class: "field picker", "data-field": field.key },
    labelOf(id, field), chips, h("div", { class: "combo" }, box.input, box.list), box.found, status, err.error);

  function name(i) {
    const row = chosen.get(i);
    return row ? label(target, row) : `#${i}`;
  }

  function draw() {
    const sorted = [...chosen.keys()].sort((a, b) => a - b);
    fill(chips, sorted.length
      ? sorted.map((i) => h("li", { class: "chip", "data-id": i },
        h("span", {}, name(i)),
        h("button", {
          type: "button", class: "remove", "aria-label": `Remove ${name(i)}`, title: `Remove ${name(i)}`,
          onclick: () => {
            const text = name(i);
            chosen.delete(i);
            draw();
            fill(status, `Removed ${text}.`);
            onChange(get());
            box.input.focus();
          },
        }, "×")))
      : h("li", { class: "none" }, field.none || "None"));
  }
  draw();

  function get() {
    return [...chosen.keys()].sort((a, b) => a - b);
  }

  return {
    el,
    get,
    know: (row) => {
      if (chosen.has(row.id)) chosen.set(row.id, row);
      draw();
    },
    error: err.show,
    focus: () => box.input.focus(),
  };
}

// refFilter is the table's filter f of a reference (op exact or under: one
// record of the target; in: several), chosen with the pickers by name or
// code. The filter's value, the ids, is kept in a hidden input marked
// data-param, where the table reads its filters; changed() is called on
// every choice. text labels it ("Department is under"); value is the
// filter's value so far, whose records are read to be named.
export function refFilter(f, text, value, changed) {
  const target = f.field.target;
  const field = { ...f.field, label: text, what: f.field.label, required: false, none: "Any" };
  const hidden = h("input", { type: "hidden", value: value || "", "data-param": f.param, "data-label": text });
  const set = (v) => {
    hidden.value = v;
    changed();
  };
  const ids = String(value || "").split(",").filter((x) => /^[0-9]+$/.test(x)).map(Number);
  let picker;
  if (f.op === "in") {
    picker = refsPicker(field, ids, null, (got) => set(got.join(",")));
  } else {
    picker = onePicker(target, field, ids.length ? ids[0] : null, null, `Any ${f.field.label.toLowerCase()}`, "any",
      (got) => set(got === null ? "" : String(got)));
  }
  // Remembered from an earlier visit as ids: their names, when they exist.
  for (const i of f.op === "in" ? ids : ids.slice(0, 1)) {
    client.send("GET", target.item(i)).then(({ data }) => {
      if (f.op === "in") picker.know(data);
      else if (picker.get() === i) picker.set(i, data);
    }, () => {});
  }
  picker.el.classList.add("filter-picker");
  picker.el.append(hidden);
  return picker.el;
}
