// A resource's records as files: the export buttons of a resource's page
// (CSV, XLSX, JSON) and the import pane, which checks a file with a dry
// run, shows what it would do and every bad row, and imports it only when
// confirmed.
//
// The token is never in a cookie, so a plain link to export/ would be
// refused: the file is fetched with the token (client.download) and
// handed to the browser as a Blob under the name the service gives it.
// The import sends the very bytes the dry run checked, as the multipart
// field "file" (its name's extension tells the service the format when
// the browser does not know the file's type).

import * as client from "./client.js";
import { h, fill, uid, humanize } from "./dom.js";

const FORMATS = [["csv", "CSV"], ["xlsx", "XLSX"], ["json", "JSON"]];

// ACCEPT is what the file input offers: the formats by extension and type.
const ACCEPT = ".csv,.xlsx,.json,text/csv,application/json,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

// save hands blob to the browser as a download named filename.
function save(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  // The download has started from the URL by now; it is let go later, not
  // at once, as some browsers read it after the click returns.
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}

// size is a file's size for people.
function size(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

// exportControls returns the export buttons of res, one a format, and
// their messages. query() returns the list's parameters (filters, search,
// ordering) the export takes when a button is pressed.
export function exportControls(res, query) {
  const status = h("p", { class: "notice", role: "status" });
  const alert = h("div", { class: "alert", role: "alert" });
  const buttons = FORMATS.map(([format, name]) => h("button", {
    type: "button", "data-format": format,
    onclick: () => run(format, name),
  }, `Export ${name}`));

  async function run(format, name) {
    fill(alert);
    fill(status, `Exporting ${res.title.toLowerCase()} as ${name}…`);
    for (const b of buttons) b.disabled = true;
    try {
      const { blob, filename } = await client.download(`${res.collection}export/`, { ...query(), format }, `${res.path}.${format}`);
      save(blob, filename);
      fill(status, `Downloaded ${filename} (${size(blob.size)}).`);
    } catch (err) {
      fill(status);
      fill(alert, err.message);
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  return {
    buttons: h("div", { class: "export", role: "group", "aria-label": `Export ${res.title.toLowerCase()}` }, buttons),
    messages: h("div", { class: "file-messages" }, alert, status),
  };
}

// messageOf is an error's message with the messages of its parameters
// (mode, dry_run ...) when it has any.
function messageOf(err) {
  const more = Object.entries(err.fieldErrors).map(([k, msgs]) => `${k}: ${[].concat(msgs).join(" ")}`);
  return [err.message, ...more].join(" ");
}

// counts shows an import's counts; dry says whether nothing was written.
function counts(result, dry) {
  const words = dry
    ? [["created", "To create"], ["updated", "To update"], ["unchanged", "Unchanged"], ["deleted", "To delete"]]
    : [["created", "Created"], ["updated", "Updated"], ["unchanged", "Unchanged"], ["deleted", "Deleted"]];
  return h("dl", { class: "fields counts" }, words.map(([key, word]) => [
    h("dt", {}, word),
    h("dd", { "data-count": key }, String(result[key] ?? 0)),
  ]));
}

// rowErrors is the table of the bad rows: one line a message, with its
// row (as a spreadsheet numbers it) and its column.
function rowErrors(rows) {
  const lines = [];
  for (const row of rows) {
    const fields = Object.entries(row.errors || {});
    if (!fields.length) lines.push([row.row, "", ""]);
    for (const [key, msgs] of fields) {
      for (const msg of [].concat(msgs)) lines.push([row.row, key, msg]);
    }
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "row-errors" },
    h("caption", {}, `${rows.length} ${rows.length === 1 ? "row" : "rows"} with errors`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Row"), h("th", { scope: "col" }, "Column"), h("th", { scope: "col" }, "Message"))),
    h("tbody", {}, lines.map(([row, key, msg]) => h("tr", {},
      h("td", { class: "num" }, String(row)),
      h("td", {}, key === "non_field_errors" ? "—" : key),
      h("td", {}, msg))))));
}

// importPane shows, in pane, the import of a file into res. ctx: changed()
// reads the list again after an import, link("") is the address to leave by.
export function importPane(pane, res, ctx) {
  const id = uid("import");
  const plural = res.title.toLowerCase();
  const heading = h("h2", { id: `${id}-title`, tabindex: "-1" }, `Import ${plural}`);
  const file = h("input", { id: `${id}-file`, type: "file", accept: ACCEPT, "aria-describedby": `${id}-hint`, onchange: forget });
  const createOnly = h("input", { id: `${id}-create`, type: "checkbox", onchange: forget });
  const deleteMissing = h("input", { id: `${id}-delete`, type: "checkbox", "aria-describedby": `${id}-delete-hint`, onchange: forget });
  const alert = h("div", { class: "alert", role: "alert" });
  const status = h("p", { class: "notice", role: "status" });
  const result = h("section", { class: "import-result", "aria-labelledby": `${id}-result` });
  const check = h("button", { type: "submit", class: "primary" }, "Check the file");
  const confirm = h("button", { type: "button", class: "primary", hidden: true, onclick: commit }, "Confirm import");
  let checked = null; // {blob, name, query} of the last clean dry run
  let busy = false;

  const code = humanize(res.code).toLowerCase();
  const form = h("form", { class: "import-form", method: "post", novalidate: true, "aria-labelledby": `${id}-title`, onsubmit: dryRun },
    h("p", { class: "hint", id: `${id}-hint` },
      `A CSV, XLSX or JSON file with the columns an export has (the ${code} is required). `,
      `A row whose ${code} matches a ${res.singular} updates it; any other row creates one. `,
      "The file is checked first; nothing is written until you confirm."),
    h("div", { class: "field" }, h("label", { for: `${id}-file` }, "File"), file),
    h("fieldset", { class: "options" },
      h("legend", {}, "Options"),
      h("div", { class: "field check" }, createOnly, h("label", { for: `${id}-create` }, `Only create: a row whose ${code} exists is an error`)),
      h("div", { class: "field check" }, deleteMissing, h("label", { for: `${id}-delete` }, `Delete the ${plural} the file lacks`),
        h("p", { class: "hint", id: `${id}-delete-hint` }, `The file is then the whole list of ${plural}.`))),
    h("div", { class: "actions" }, check, confirm, h("a", { class: "button", href: ctx.link("").replace(/\/$/, "") }, "Close")));

  function query(dry) {
    return {
      dry_run: dry ? "true" : "",
      mode: createOnly.checked ? "create" : "",
      delete_missing: deleteMissing.checked ? "true" : "",
    };
  }

  // forget drops the last dry run: the file or the options changed, so it
  // says nothing about what an import would do now.
  function forget() {
    checked = null;
    confirm.hidden = true;
    fill(result);
    fill(status);
    fill(alert);
  }

  function showResult(title, data, dry) {
    const rows = data.rows || [];
    fill(result,
      h("h3", { id: `${id}-result`, tabindex: "-1" }, title),
      // With bad rows the service stops counting early: its counts would
      // mislead, so only the rows show.
      !rows.length && data.created !== undefined && counts(data, dry),
      rows.length > 0 && rowErrors(rows));
    result.querySelector("h3").focus();
  }

  async function post(blob, name, q) {
    const form = new FormData();
    form.append("file", blob, name);
    return (await client.send("POST", `${res.collection}import/`, { form, query: q })).data;
  }

  async function dryRun(e) {
    e.preventDefault();
    if (busy) return;
    forget();
    const chosen = file.files && file.files[0];
    if (!chosen) {
      fill(alert, "Choose a file to import.");
      file.focus();
      return;
    }
    busy = true;
    check.disabled = true;
    fill(status, `Checking ${chosen.name}…`);
    try {
      // The bytes checked are the bytes imported, whatever happens to the
      // file on disk meanwhile.
      const blob = new Blob([await chosen.arrayBuffer()], { type: chosen.type });
      const data = await post(blob, chosen.name, query(true));
      const rows = data.rows || [];
      showResult(`Dry run of ${chosen.name}`, data, true);
      if (rows.length) {
        fill(status);
        fill(alert, `${rows.length} ${rows.length === 1 ? "row is" : "rows are"} invalid; nothing would be imported. Correct the file and check it again.`);
        return;
      }
      checked = { blob, name: chosen.name, query: query(false) };
      fill(status, "The file is valid. Nothing has been written yet: confirm to import it.");
      confirm.hidden = false;
    } catch (err) {
      fill(status);
      fill(alert, err.status === 0 || err.status === 401 ? err.message : messageOf(err));
    } finally {
      busy = false;
      check.disabled = false;
    }
  }

  async function commit() {
    if (busy || !checked) return;
    busy = true;
    confirm.disabled = true;
    check.disabled = true;
    fill(alert);
    fill(status, `Importing ${checked.name}…`);
    try {
      const data = await post(checked.blob, checked.name, checked.query);
      showResult(`Imported ${checked.name}`, data, false);
      fill(status, `Imported: ${data.created} created, ${data.updated} updated, ${data.unchanged} unchanged, ${data.deleted} deleted.`);
      checked = null;
      confirm.hidden = true;
      ctx.changed();
    } catch (err) {
      fill(status);
      fill(alert, messageOf(err));
      // Refused after a clean dry run (someone changed the records
      // meanwhile): its bad rows, as the dry run would show them.
      const rows = err.body && Array.isArray(err.body.rows) ? err.body.rows : [];
      if (rows.length) showResult(`Refused: ${checked.name}`, { rows }, false);
      checked = null;
      confirm.hidden = true;
    } finally {
      busy = false;
      confirm.disabled = false;
      check.disabled = false;
    }
  }

  fill(pane, heading, alert, status, form, result);
  heading.focus();
}
