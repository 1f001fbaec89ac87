// A resource's records as a table: the list's filters above it, ordering
// by a column header, paging with the total count.

import * as client from "./client.js";
import { h, fill, uid, debounce, srOnly } from "./dom.js";
import { label } from "./model.js";
import { refFilter } from "./picker.js";

const PAGE_SIZES = [10, 25, 50, 100];

const OP_WORDS = { exact: "is", icontains: "contains", gte: "at least", lte: "at most", isnull: "set", in: "is one of", under: "is under" };

// display renders a value of a field as text.
export function display(field, value) {
  if (value === null || value === undefined) return "—";
  if (field.kind === "boolean") return value ? "Yes" : "No";
  return String(value);
}

// filterControl returns the input of one filter: text for text (and
// "contains"), a select for choices, booleans and isnull ("set": yes or
// no), a number or a date input for those, the pickers of the records
// referred to for a reference, each labelled with the field and the
// comparison.
function filterControl(f, value, changed) {
  const id = uid("filter");
  const text = `${f.field.label} ${OP_WORDS[f.op]}`;
  const ref = f.field.kind === "ref" || f.field.kind === "refs";
  if (ref && f.field.target && f.op !== "isnull") return refFilter(f, text, value, changed);
  let input;
  if (f.op === "isnull" || f.field.kind === "boolean") {
    const options = f.op === "isnull" ? [["", "Any"], ["false", "Yes"], ["true", "No"]] : [["", "Any"], ["true", "Yes"], ["false", "No"]];
    input = h("select", { id, onchange: changed }, options.map(([v, t]) => h("option", { value: v, selected: v === value }, t)));
  } else if (f.field.kind === "choice" && f.op === "exact") {
    input = h("select", { id, onchange: changed },
      h("option", { value: "" }, "Any"),
      f.field.choices.map((c) => h("option", { value: c, selected: c === value }, c)));
  } else {
    let type = "search";
    if (f.op !== "icontains" && f.field.kind === "integer") type = "number";
    if (f.op !== "icontains" && f.field.kind === "date") type = "date";
    // A reference whose resource the UI does not know is filtered by id
    // (in: ids separated by commas), as the list takes it.
    if (ref && (f.op === "exact" || f.op === "under")) type = "number";
    input = h("input", { id, type, value: value || "", oninput: changed, autocomplete: "off", min: type === "number" && ref ? 1 : null, placeholder: ref ? (f.op === "in" ? "ids, e.g. 3,5" : "id") : null });
  }
  input.dataset.param = f.param;
  return h("div", { class: "field" }, h("label", { for: id }, text), input);
}

// tableView draws the table of res into pane; state (page, pageSize,
// ordering, filters) is kept by the caller across visits. It returns the
// view's controller: refresh() reads the page again, select(id) marks a
// row.
export function tableView(pane, res, state, { open }) {
  let selected = null;
  let seq = 0; // answers to superseded requests are dropped
  const status = h("p", { class: "summary", role: "status" });
  const alert = h("div", { class: "alert", role: "alert" });
  const body = h("div", { class: "table-wrap" });
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });

  const filters = res.filters.filter((f) => f.field.kind !== "parent");
  const main = filters.filter((f) => f.op === "icontains");
  const more = filters.filter((f) => f.op !== "icontains");
  const changed = debounce(() => {
    for (const el of form.querySelectorAll("[data-param]")) state.filters[el.dataset.param] = el.value;
    state.page = 1;
    load();
  }, 300);
  const searchId = uid("search");
  const form = h("form", { class: "filters", role: "search", "aria-label": `Filter ${res.title.toLowerCase()}`, novalidate: true, onsubmit: (e) => e.preventDefault() },
    res.search && h("div", { class: "field" }, h("label", { for: searchId }, "Search"),
      h("input", { id: searchId, type: "search", value: state.filters.search || "", oninput: changed, autocomplete: "off", "data-param": "search" })),
    main.map((f) => filterControl(f, state.filters[f.param], changed)),
    more.length > 0 && h("details", { class: "more-filters", open: more.some((f) => state.filters[f.param]) ? true : null },
      h("summary", {}, "More filters"),
      h("div", { class: "filter-grid" }, more.map((f) => filterControl(f, state.filters[f.param], changed)))));
  fill(pane, form, alert, status, body, pager);

  const columns = [{ key: "id", label: "Id", kind: "integer" }, ...res.fields];

  function header(col) {
    const ord = state.ordering;
    const dir = ord === col.key ? "ascending" : ord === `-${col.key}` ? "descending" : null;
    if (!res.sortable.has(col.key)) return h("th", { scope: "col" }, col.label);
    return h("th", { scope: "col", "aria-sort": dir || "none" },
      h("button", {
        type: "button", class: "sort",
        onclick: () => {
          state.ordering = dir === "ascending" ? `-${col.key}` : col.key;
          state.page = 1;
          load();
        },
      }, col.label, h("span", { class: "arrow", "aria-hidden": "true" }, dir === "ascending" ? " ▲" : dir === "descending" ? " ▼" : "")));
  }

  function cell(col, row) {
    const v = row[col.key];
    if (col.key === res.code) {
      return h("td", {}, h("a", { href: `#/${res.path}/table/${row.id}`, onclick: (e) => { e.preventDefault(); open(row.id); } }, display(col, v)));
    }
    if (col.kind === "parent" && v !== null) {
      return h("td", {}, h("a", { href: `#/${res.path}/table/${v}`, onclick: (e) => { e.preventDefault(); open(v); } }, srOnly("Record "), `#${v}`));
    }
    if ((col.kind === "ref" || col.kind === "refs") && col.target) {
      // Expanded by the list: {id, code, name}, or the bare id when the
      // service did not expand it.
      const link = (x) => {
        const rid = x && typeof x === "object" ? x.id : x;
        return h("a", { href: `#/${col.target.path}/table/${rid}` }, x && typeof x === "object" ? label(col.target, x) : `#${rid}`);
      };
      if (col.kind === "ref") return h("td", { class: "ref" }, v === null || v === undefined ? "—" : link(v));
      const list = v || [];
      return h("td", { class: "ref" }, list.length ? list.map((x, i) => [i > 0 && ", ", link(x)]) : "—");
    }
    return h("td", { class: col.kind === "integer" ? "num" : null }, display(col, v));
  }

  function mark() {
    for (const tr of body.querySelectorAll("tbody tr")) {
      const on = Number(tr.dataset.id) === selected;
      tr.classList.toggle("selected", on);
      if (on) tr.setAttribute("aria-current", "true");
      else tr.removeAttribute("aria-current");
    }
  }

  async function load() {
    const mine = ++seq;
    const query = { ...state.filters, page: state.page, page_size: state.pageSize, ordering: state.ordering };
    // The referenced records' codes and names, in the same request.
    if (res.expand.length) query.expand = res.expand.join(",");
    pane.setAttribute("aria-busy", "true");
    try {
      let answer;
      try {
        answer = await client.send("GET", res.collection, { query });
      } catch (err) {
        if (err.status !== 404 || state.page === 1) throw err;
        // Past the last page (records were deleted): show the last one.
        state.page = "last";
        answer = await client.send("GET", res.collection, { query: { ...query, page: "last" } });
      }
      if (mine !== seq) return;
      const { count, data } = answer.data;
      const pages = Math.max(1, Math.ceil(count / state.pageSize));
      if (state.page === "last") state.page = pages;
      fill(alert);
      fill(status, `${count} ${count === 1 ? res.singular : res.title.toLowerCase()}`, pages > 1 ? ` · page ${state.page} of ${pages}` : "");
      fill(body, h("table", {},
        h("caption", { class: "sr-only" }, res.title),
        h("thead", {}, h("tr", {}, columns.map(header))),
        h("tbody", {}, data.map((row) => h("tr", { "data-id": row.id }, columns.map((col) => cell(col, row)))))));
      if (!data.length) body.append(h("p", { class: "empty" }, `No ${res.title.toLowerCase()} to show.`));
      mark();
      drawPager(pages);
    } catch (err) {
      if (mine !== seq) return;
      fill(alert, err.message);
      // A filter's messages name the parameter: show them beside it.
      for (const [param, msgs] of Object.entries(err.fieldErrors)) {
        const el = form.querySelector(`[data-param="${CSS.escape(param)}"]`);
        // A reference's filter is a hidden input beside its pickers.
        if (el) fill(alert, `${el.dataset.label || el.labels[0].textContent}: ${msgs.join(" ")}`);
      }
    } finally {
      if (mine === seq) pane.removeAttribute("aria-busy");
    }
  }

  function drawPager(pages) {
    const go = (p) => () => { state.page = p; load(); };
    const sizeId = uid("page-size");
    fill(pager,
      h("button", { type: "button", onclick: go(1), disabled: state.page <= 1 }, "First"),
      h("button", { type: "button", onclick: go(state.page - 1), disabled: state.page <= 1 }, "Previous"),
      h("button", { type: "button", onclick: go(state.page + 1), disabled: state.page >= pages }, "Next"),
      h("button", { type: "button", onclick: go(pages), disabled: state.page >= pages }, "Last"),
      h("label", { for: sizeId }, "Per page"),
      h("select", {
        id: sizeId,
        onchange: (e) => { state.pageSize = Number(e.target.value); state.page = 1; load(); },
      }, PAGE_SIZES.map((n) => h("option", { value: n, selected: n === state.pageSize }, String(n)))));
  }

  load();
  return {
    refresh: () => load(),
    select: (id) => { selected = id; mark(); },
  };
}
