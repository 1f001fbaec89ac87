// One record beside the list: its path of ancestors (the breadcrumb), its
// fields, and for editors a form to change them (the parent and the
// references with pickers), add a child, or delete it; its history (who
// changed what, when) when the service offers it; or the form for a new
// record.
//
// The record is read with ?expand= of its references, so the pickers and
// the text show the records referred to by name and code; what is sent
// back is ids, as the service takes them.
//
// A change sends only the fields that changed, with If-Match: the ETag of
// the read. When someone else changed the record in between (412) nothing
// is saved and the pane offers to reload it. The server's messages are
// shown as it gives them: a field's beside the field, any other (409 for
// a record that is still a parent, 403, ...) above the form. Viewers get
// the fields as text and no controls.

import * as client from "./client.js";
import { h, fill, uid } from "./dom.js";
import { label } from "./model.js";
import { parentPicker, refPicker, refsPicker } from "./picker.js";
import { display } from "./table.js";

// fieldInput returns {el, get(), error(msgs), focus()} for a field that is
// not the parent: a text input with the field's maximum length, a number
// input with its bounds, a date input, a select of its choices, or a
// checkbox. get() returns the value to send (null for an empty optional
// field), or undefined when the input holds something that is not a value
// of the field (letters in a number input).
export function fieldInput(field, value) {
  const id = uid("field");
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const error = h("p", { class: "field-error", id: errorId, hidden: true });
  let hint = "";
  let input;
  let get;
  switch (field.kind) {
    case "choice":
      input = h("select", { id },
        field.nullable && h("option", { value: "" }, "—"),
        field.choices.map((c) => h("option", { value: c, selected: c === value }, c)));
      if (value === null || value === undefined) input.value = "";
      get = () => (input.value === "" ? null : input.value);
      break;
    case "boolean":
      input = h("input", { id, type: "checkbox", checked: Boolean(value) });
      get = () => input.checked;
      break;
    case "integer":
      input = h("input", { id, type: "number", step: "1", min: field.min, max: field.max, value: value ?? "" });
      if (field.min !== undefined && field.max !== undefined) hint = `From ${field.min} to ${field.max}.`;
      else if (field.min !== undefined) hint = `At least ${field.min}.`;
      else if (field.max !== undefined) hint = `At most ${field.max}.`;
      get = () => {
        if (input.validity.badInput) return undefined;
        return input.value === "" ? null : Number(input.value);
      };
      break;
    case "date":
      input = h("input", { id, type: "date", value: value ?? "" });
      get = () => (input.validity.badInput ? undefined : input.value || null);
      break;
    default:
      input = h("input", { id, type: "text", maxlength: field.maxLength, autocomplete: "off", value: value ?? "" });
      if (field.maxLength) hint = `At most ${field.maxLength} characters.`;
      get = () => (field.nullable && input.value === "" ? null : input.value);
  }
  if (field.required) input.setAttribute("aria-required", "true");
  const hintEl = hint && h("p", { class: "hint", id: hintId }, hint);
  const describedBy = (withError) => [hint && hintId, withError && errorId].filter(Boolean).join(" ");
  if (hint) input.setAttribute("aria-describedby", describedBy(false));
  const labelEl = h("label", { for: id }, field.label, field.required && h("span", { class: "req", "aria-hidden": "true" }, " *"));
  const el = field.kind === "boolean"
    ? h("div", { class: "field check", "data-field": field.key }, input, labelEl, hintEl, error)
    : h("div", { class: "field", "data-field": field.key }, labelEl, input, hintEl, error);
  return {
    el,
    get,
    error(msgs) {
      const on = Boolean(msgs && msgs.length);
      error.hidden = !on;
      fill(error, on ? msgs.join(" ") : "");
      if (on) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      const d = describedBy(on);
      if (d) input.setAttribute("aria-describedby", d);
      else input.removeAttribute("aria-describedby");
    },
    focus: () => input.focus(),
  };
}

// same reports whether a value read from an input equals the stored one.
function same(field, now, before) {
  if (field.kind === "boolean") return Boolean(now) === Boolean(before);
  if (field.kind === "refs") return String(now || []) === String(before || []);
  return (now ?? null) === (before ?? null);
}

// splitRefs returns a record as the service takes it: each expanded
// reference ({id, code, name}) replaced by its id. refRows maps each
// reference field's key to its records by id.
function splitRefs(res, row) {
  const values = { ...row };
  const refRows = new Map();
  for (const f of res.fields) {
    if (f.kind !== "ref" && f.kind !== "refs") continue;
    const byId = new Map();
    const idOf = (v) => {
      if (v && typeof v === "object") {
        byId.set(v.id, v);
        return v.id;
      }
      return v;
    };
    const v = row[f.key];
    values[f.key] = f.kind === "refs" ? (v || []).map(idOf).sort((a, b) => a - b) : idOf(v ?? null);
    refRows.set(f.key, byId);
  }
  return { values, refRows };
}

// inputsFor makes the inputs of every field of res, from values.
function inputsFor(res, values, parentRow, refRows = new Map()) {
  const inputs = new Map();
  for (const f of res.fields) {
    let input;
    const rows = refRows.get(f.key) || new Map();
    if (f.kind === "parent") input = parentPicker(res, f, values[f.key] ?? null, parentRow);
    else if (f.kind === "ref") input = refPicker(f, values[f.key] ?? null, rows.get(values[f.key]) || null);
    else if (f.kind === "refs") input = refsPicker(f, values[f.key] || [], rows);
    else input = fieldInput(f, values[f.key]);
    inputs.set(f.key, input);
  }
  return inputs;
}

// refText shows a reference's value as text: the records' names and codes.
function refText(f, v) {
  const one = (x) => (x && typeof x === "object" ? label(f.target, x) : `#${x}`);
  if (f.kind === "refs") return v && v.length ? v.map(one).join(", ") : "None";
  return v === null || v === undefined ? "—" : one(v);
}

// showErrors puts a failed write's messages beside their fields, and the
// rest in alert. It reports whether any field had one.
function showErrors(res, inputs, alert, err) {
  const byField = err.fieldErrors;
  let first = null;
  const others = [];
  for (const [key, input] of inputs) {
    input.error(byField[key]);
    if (byField[key] && !first) first = input;
  }
  for (const [key, msgs] of Object.entries(byField)) {
    if (!inputs.has(key)) others.push(`${key}: ${[].concat(msgs).join(" ")}`);
  }
  if (first) {
    fill(alert, "Not saved: see the messages beside the fields.", others.length ? ` ${others.join(" ")}` : "");
    first.focus();
  } else {
    fill(alert, err.message);
  }
  return Boolean(first);
}

// unreadable checks every input holds a value of its field, marking those
// that do not; it reports whether one did not.
function unreadable(inputs) {
  let bad = false;
  for (const [, input] of inputs) {
    if (input.get() === undefined) {
      input.error(["Enter a valid value."]);
      if (!bad) input.focus();
      bad = true;
    } else {
      input.error(null);
    }
  }
  return bad;
}

// breadcrumb shows the record's ancestors, root first, each a link.
function breadcrumb(res, ancestors, row, ctx) {
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    h("ol", {},
      ancestors.map((a) => h("li", {}, h("a", { href: ctx.link(a.id) }, label(res, a)))),
      h("li", { "aria-current": "page" }, label(res, row))));
}

// historyOpen remembers, while the page is open, whether the user opened a
// record's history: the next record (or this one, saved) shows it open.
let historyOpen = false;

// auditValue renders a value of the audit trail as text.
function auditValue(v) {
  if (v === null || v === undefined) return "—";
  if (Array.isArray(v)) return v.length ? v.map(auditValue).join(", ") : "none";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

// auditTime shows an entry's time (UTC, to the microsecond) to the second.
function auditTime(at) {
  return `${String(at).replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, "")} UTC`;
}

// actorName is who made a change: a user, or a command of the CLI.
function actorName(actor) {
  if (!actor) return "—";
  if (actor.username) return actor.username;
  if (actor.cli) return `command line (${actor.cli})`;
  return "—";
}

// history is a record's history: a disclosure that, opened, lists its
// audit entries, newest first (who, when, the action, each changed field
// before → after), a page at a time. It is nothing when the service does
// not serve the history; a viewer the service refuses sees its message.
function history(res, id) {
  if (!res.ops.history) return null;
  const list = h("div", { class: "history-list" });
  const status = h("p", { class: "notice", role: "status" });
  const more = h("div", { class: "actions" });
  const details = h("details", { class: "history", open: historyOpen ? true : null },
    h("summary", {}, h("h3", {}, "History")), status, list, more);
  let loaded = false;
  let table = null;

  async function load(page) {
    fill(more);
    details.setAttribute("aria-busy", "true");
    try {
      const { data } = await client.send("GET", `${res.item(id)}history/`, { query: { page } });
      if (!table) {
        table = h("table", {},
          h("caption", { class: "sr-only" }, `Changes of this ${res.singular}, newest first`),
          h("thead", {}, h("tr", {}, ["When", "Who", "Action", "Changes"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}));
        fill(list, table);
      }
      fill(status, data.count === 1 ? "1 change" : `${data.count} changes`);
      const body = table.querySelector("tbody");
      for (const e of data.data) {
        const changes = Object.entries(e.changes || {});
        body.append(h("tr", { "data-entry": e.id },
          h("td", {}, h("time", { datetime: e.at }, auditTime(e.at))),
          h("td", {}, actorName(e.actor)),
          h("td", {}, e.action),
          h("td", {}, changes.length
            ? h("ul", { class: "changes" }, changes.map(([key, [before, after]]) => {
              const f = res.byKey.get(key);
              return h("li", { "data-key": key },
                h("span", { class: "key" }, f ? f.label : key), ": ",
                e.action === "create" ? auditValue(after)
                  : e.action === "delete" ? auditValue(before)
                    : [auditValue(before), " → ", auditValue(after)]);
            }))
            : "—")));
      }
      if (data.next) {
        fill(more, h("button", { type: "button", onclick: () => load(page + 1) }, "Show older changes"));
      }
    } catch (err) {
      fill(status);
      fill(list, h("p", { class: "alert", role: "alert" }, err.message));
    } finally {
      details.removeAttribute("aria-busy");
    }
  }

  details.addEventListener("toggle", () => {
    historyOpen = details.open;
    if (details.open && !loaded) {
      loaded = true;
      load(1);
    }
  });
  return details;
}

// loads tells whether a pane's content is still the one asked for, when
// the user moved on while it loaded.
const loads = new WeakMap();

// recordPane shows the record id of res in pane. opts: focus (move focus
// to its heading), flash (a message to show, such as "Saved.").
export async function recordPane(pane, res, id, ctx, opts = {}) {
  const mine = {};
  loads.set(pane, mine);
  pane.setAttribute("aria-busy", "true");
  let row;
  let etag;
  let ancestors = [];
  try {
    const [read, up] = await Promise.all([
      client.send("GET", res.item(id), { query: res.expand.length ? { expand: res.expand.join(",") } : undefined }),
      res.ops.ancestors ? client.send("GET", `${res.item(id)}ancestors/`) : null,
    ]);
    row = read.data;
    etag = read.etag;
    ancestors = up ? up.data.data : [];
  } catch (err) {
    if (loads.get(pane) !== mine) return;
    pane.removeAttribute("aria-busy");
    fill(pane, h("div", { class: "alert", role: "alert" }, err.status === 404 ? `There is no ${res.singular} #${id}; it may have been deleted.` : err.message));
    return;
  }
  if (loads.get(pane) !== mine) return;
  pane.removeAttribute("aria-busy");

  const parentRow = ancestors.length ? ancestors[ancestors.length - 1] : null;
  const heading = h("h2", { tabindex: "-1" }, row[res.nameKey], " ", h("span", { class: "code" }, row[res.code]));
  const notice = h("p", { class: "notice", role: "status" }, opts.flash || "");
  const alert = h("div", { class: "alert", role: "alert" });
  const reload = (flash) => recordPane(pane, res, id, ctx, { focus: true, flash });

  if (!ctx.canEdit) {
    fill(pane,
      res.parent && breadcrumb(res, ancestors, row, ctx),
      heading, notice,
      h("dl", { class: "fields" }, res.fields.map((f) => [
        h("dt", {}, f.label),
        h("dd", {}, f.kind === "parent" ? (parentRow ? label(res, parentRow) : "None (a root)")
          : f.target ? refText(f, row[f.key]) : display(f, row[f.key])),
      ])),
      history(res, id));
    if (opts.focus) heading.focus();
    return;
  }

  const { values, refRows } = splitRefs(res, row);
  const inputs = inputsFor(res, values, parentRow, refRows);
  const save = h("button", { type: "submit", class: "primary" }, "Save");
  const actions = h("div", { class: "actions" });
  const form = h("form", { class: "record-form", method: "post", novalidate: true, "aria-label": `Edit ${label(res, row)}`, onsubmit: submit },
    [...inputs.values()].map((i) => i.el), actions);

  function drawActions() {
    fill(actions,
      save,
      res.parent && res.ops.create && h("a", { class: "button", href: ctx.newChild(row.id) }, `Add a ${res.singular} below`),
      res.ops.delete && h("button", { type: "button", class: "danger", onclick: confirmDelete }, "Delete"));
  }
  drawActions();

  function stale() {
    fill(alert,
      `This ${res.singular} was changed by someone else after you opened it, so your changes were not saved. `,
      h("button", { type: "button", onclick: () => reload("Reloaded: this is the current version.") }, "Reload it"),
      " to see the current version (your changes here will be lost).");
  }

  async function submit(e) {
    e.preventDefault();
    fill(alert);
    fill(notice);
    if (unreadable(inputs)) return;
    const body = {};
    for (const f of res.fields) {
      const v = inputs.get(f.key).get();
      if (!same(f, v, values[f.key])) body[f.key] = v;
    }
    for (const [, input] of inputs) input.error(null);
    if (!Object.keys(body).length) {
      fill(notice, "Nothing to save: no field was changed.");
      return;
    }
    save.disabled = true;
    try {
      await client.send("PATCH", res.item(id), { body, headers: { "If-Match": etag } });
      const moved = res.parent && res.parent in body;
      ctx.changed({ open: moved ? [body[res.parent]] : [] });
      reload("Saved.");
    } catch (err) {
      if (err.status === 412) stale();
      else if (err.status === 404) fill(alert, `This ${res.singular} no longer exists; it may have been deleted.`);
      else showErrors(res, inputs, alert, err);
    } finally {
      save.disabled = false;
    }
  }

  function confirmDelete() {
    const yes = h("button", { type: "button", class: "danger", onclick: remove }, `Delete ${row[res.nameKey]}`);
    fill(actions,
      h("p", { class: "confirm" }, `Delete ${label(res, row)}? This cannot be undone.`),
      yes,
      h("button", { type: "button", onclick: () => { drawActions(); } }, "Cancel"));
    yes.focus();
  }

  async function remove() {
    fill(alert);
    try {
      await client.send("DELETE", res.item(id), { headers: { "If-Match": etag } });
      ctx.changed();
      ctx.deleted(`Deleted ${label(res, row)}.`);
    } catch (err) {
      drawActions();
      if (err.status === 412) stale();
      else fill(alert, err.message);
    }
  }

  fill(pane, res.parent && breadcrumb(res, ancestors, row, ctx), heading, notice, alert, form, history(res, id));
  if (opts.focus) heading.focus();
}

// createPane shows the form for a new record of res, below parentId when
// given.
export async function createPane(pane, res, parentId, ctx) {
  const mine = {};
  loads.set(pane, mine);
  let parentRow = null;
  if (parentId !== null && res.parent) {
    try {
      parentRow = (await client.send("GET", res.item(parentId))).data;
    } catch (err) {
      parentRow = null; // the picker shows the id; the server judges it
    }
    if (loads.get(pane) !== mine) return;
  }
  const defaults = {};
  for (const f of res.fields) {
    if (f.default !== undefined) defaults[f.key] = f.default;
  }
  if (res.parent) defaults[res.parent] = parentId;
  const inputs = inputsFor(res, defaults, parentRow);
  const alert = h("div", { class: "alert", role: "alert" });
  const create = h("button", { type: "submit", class: "primary" }, "Create");
  const title = parentRow ? `New ${res.singular} below ${label(res, parentRow)}` : `New ${res.singular}`;
  const heading = h("h2", { tabindex: "-1" }, title);
  const form = h("form", { class: "record-form", method: "post", novalidate: true, "aria-label": title, onsubmit: submit },
    [...inputs.values()].map((i) => i.el),
    h("div", { class: "actions" }, create, h("a", { class: "button", href: ctx.link("").replace(/\/$/, "") }, "Cancel")));

  async function submit(e) {
    e.preventDefault();
    fill(alert);
    if (unreadable(inputs)) return;
    const body = {};
    for (const f of res.fields) {
      const v = inputs.get(f.key).get();
      // Empty optional fields are left out (the server stores their
      // default); an empty code or name is sent, for the server's message.
      if (f.kind === "refs" && !v.length) continue;
      if (v !== null || f.key === res.code || f.key === res.nameKey) body[f.key] = v ?? "";
    }
    create.disabled = true;
    try {
      const { data } = await client.send("POST", res.collection, { body });
      ctx.changed({ open: res.parent ? [data[res.parent]] : [] });
      ctx.created(data);
    } catch (err) {
      showErrors(res, inputs, alert, err);
    } finally {
      create.disabled = false;
    }
  }

  fill(pane, heading, alert, form);
  heading.focus();
}

// takePane gives pane to another view (the import): a record still
// loading into it is dropped.
export function takePane(pane) {
  loads.set(pane, {});
  pane.removeAttribute("aria-busy");
}

// emptyPane is the pane with no record chosen, with a message when there
// is one ("Deleted ...").
export function emptyPane(pane, res, message) {
  loads.set(pane, {});
  pane.removeAttribute("aria-busy");
  fill(pane,
    h("p", { class: "notice", role: "status" }, message || ""),
    h("p", { class: "hint" }, `Choose a ${res.singular} to see it here.`));
}
