// The admin UI: sign-in, then a page per resource (a table, and a tree for
// hierarchical ones) beside the selected record. Everything it offers is
// read from the service's OpenAPI document (model.js).
//
// Addresses are fragments, so the page is never reloaded and the token
// never leaves the tab:
//
//   #/<path>                     the resource's table
//   #/<path>/<view>              view is "table" or "tree"
//   #/<path>/<view>/<id>         with that record beside it
//   #/<path>/<view>/new?parent=N with a form for a new record
//   #/<path>/<view>/import       with the import of a file (editors)

import * as client from "./client.js";
import { describe } from "./model.js";
import { h, fill } from "./dom.js";
import { tableView } from "./table.js";
import { treeView } from "./tree.js";
import { recordPane, createPane, emptyPane, takePane } from "./record.js";
import { exportControls, importPane } from "./files.js";

const root = document.getElementById("app");
let resources = [];
let me = null; // {username, role}
let main = null; // the <main> of the signed-in page
let page = null; // {res, view, list (the view's controller), detail (its pane)}
let flash = ""; // a message for the next detail pane ("Deleted ...")
let keepFocus = false; // the next route change leaves focus where it is (the tree's selection)

// Per resource, what its views remember while the page is open: the
// table's page, ordering and filters, the tree's open nodes.
const memory = new Map();
function remembered(res) {
  if (!memory.has(res.path)) {
    memory.set(res.path, { table: { page: 1, pageSize: 25, ordering: "", filters: {} }, tree: { open: new Set() } });
  }
  return memory.get(res.path);
}

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [pathPart, queryPart] = hash.split("?");
  const [path, view, id] = pathPart.split("/").map(decodeURIComponent);
  const query = new URLSearchParams(queryPart || "");
  return { path, view, id, parent: query.get("parent") };
}

// hasTree reports whether res can be shown as a tree: a parent, and lists
// that count each record's children.
function hasTree(res) {
  return Boolean(res.parent && res.countsChildren);
}

function route() {
  if (!me) return;
  const r = parseRoute();
  const res = resources.find((x) => x.path === r.path) || resources[0];
  if (!res) {
    fill(main, h("h1", {}, "Nothing to keep"), h("p", {}, "The service offers no resources."));
    return;
  }
  const view = r.view === "tree" && hasTree(res) ? "tree" : "table";
  if (!page || page.res !== res || page.view !== view) showResource(res, view);
  showDetail(res, view, r);
}

function showResource(res, view) {
  document.title = `${res.title} · Personnel admin`;
  for (const a of root.querySelectorAll("nav.resources a")) {
    if (a.dataset.path === res.path) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const canCreate = me.role === "editor" && res.ops.create;
  const canImport = me.role === "editor" && res.ops.import;
  // The export takes what the table shows: its filters, search and
  // ordering; from the tree, which shows them all, every record.
  const table = remembered(res).table;
  const exporting = res.ops.export && exportControls(res, () => (view === "table" ? { ...table.filters, ordering: table.ordering } : {}));
  const tab = (name, text) => h("a", { href: `#/${res.path}/${name}`, "aria-current": view === name ? "page" : null }, text);
  const listPane = h("section", { class: "pane list-pane", "aria-label": view === "tree" ? `${res.title} as a tree` : `${res.title} as a table` });
  const detail = h("section", { class: "pane detail-pane", "aria-label": `Selected ${res.singular}` });
  fill(main,
    h("div", { class: "page-head" },
      h("h1", {}, res.title),
      h("nav", { class: "views", "aria-label": "Views" }, tab("table", "Table"), hasTree(res) && tab("tree", "Tree")),
      h("div", { class: "page-actions" },
        exporting && exporting.buttons,
        canImport && h("a", { class: "button", href: `#/${res.path}/${view}/import` }, "Import"),
        canCreate && h("a", { class: "button primary", href: `#/${res.path}/${view}/new` }, `New ${res.singular}`))),
    exporting && exporting.messages,
    h("div", { class: "split" }, listPane, detail));
  const open = (id, opts = {}) => {
    keepFocus = Boolean(opts.keepFocus);
    location.hash = `#/${res.path}/${view}/${id}`;
  };
  const list = view === "tree"
    ? treeView(listPane, res, remembered(res).tree, { open })
    : tableView(listPane, res, remembered(res).table, { open });
  page = { res, view, list, detail };
}

function showDetail(res, view, r) {
  const { detail, list } = page;
  const focus = !keepFocus;
  keepFocus = false;
  const ctx = {
    canEdit: me.role === "editor",
    link: (id) => `#/${res.path}/${view}/${id}`,
    newChild: (id) => `#/${res.path}/${view}/new?parent=${encodeURIComponent(id)}`,
    // After a write the list is read again; the records a write moved
    // into or under are opened in the tree, so they stay in sight.
    changed: (opts = {}) => list.refresh(opts),
    created: (row) => {
      flash = "Created.";
      location.hash = `#/${res.path}/${view}/${row.id}`;
    },
    deleted: (message) => {
      flash = message;
      location.hash = `#/${res.path}/${view}`;
    },
  };
  const id = r.id && /^[0-9]+$/.test(r.id) ? Number(r.id) : null;
  list.select(id);
  if (r.id === "import" && ctx.canEdit && res.ops.import) {
    takePane(detail);
    importPane(detail, res, ctx);
  } else if (r.id === "new" && ctx.canEdit && res.ops.create) {
    createPane(detail, res, r.parent && /^[0-9]+$/.test(r.parent) ? Number(r.parent) : null, ctx);
  } else if (id !== null) {
    recordPane(detail, res, id, ctx, { focus, flash });
  } else {
    emptyPane(detail, res, flash);
  }
  flash = "";
}

// showApp draws the signed-in page.
function showApp() {
  main = h("main", { id: "main", tabindex: "-1" });
  fill(root,
    h("a", { class: "skip", href: "#main", onclick: (e) => { e.preventDefault(); main.focus(); } }, "Skip to content"),
    h("header", { class: "bar" },
      h("span", { class: "brand" }, "Personnel"),
      h("nav", { class: "resources", "aria-label": "Resources" },
        h("ul", {}, resources.map((res) => h("li", {}, h("a", { href: `#/${res.path}`, "data-path": res.path }, res.title))))),
      h("div", { class: "who" },
        h("span", { class: "user" }, me.username, " ", h("span", { class: "role" }, `(${me.role})`)),
        h("a", { href: "../personnel/api/docs/" }, "API reference"),
        h("button", { type: "button", onclick: () => { client.signOut(); signInPage(client.SIGNED_OUT); } }, "Sign out"))),
    main);
  page = null;
  route();
}

async function start() {
  me = client.user();
  if (!resources.length) resources = describe(await client.loadDocument());
  showApp();
}

// signInPage shows the sign-in form, with a message (why the last session
// ended) when there is one.
function signInPage(message) {
  me = null;
  page = null;
  document.title = "Sign in · Personnel admin";
  const error = h("div", { class: "alert", role: "alert" }, message === client.EXPIRED ? message : "");
  const notice = h("p", { class: "notice", role: "status" }, message && message !== client.EXPIRED ? message : "");
  const username = h("input", { id: "username", name: "username", autocomplete: "username", required: true, "aria-required": "true" });
  const password = h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true, "aria-required": "true" });
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h("form", {
    class: "signin-form", method: "post", novalidate: true, "aria-labelledby": "signin-title",
    onsubmit: async (e) => {
      e.preventDefault();
      fill(error);
      submit.disabled = true;
      try {
        await client.signIn(username.value, password.value);
        await start();
      } catch (err) {
        fill(error, err.message);
        password.select();
        password.focus();
      } finally {
        submit.disabled = false;
      }
    },
  },
  h("h1", { id: "signin-title" }, "Sign in to Personnel"),
  error,
  notice,
  h("div", { class: "field" }, h("label", { for: "username" }, "Username"), username),
  h("div", { class: "field" }, h("label", { for: "password" }, "Password"), password),
  h("div", { class: "actions" }, submit));
  fill(root, h("main", { id: "main", class: "signin" }, form, h("p", {}, h("a", { href: "../personnel/api/docs/" }, "API reference"))));
  username.focus();
}

async function boot() {
  client.onExpired((message) => signInPage(message));
  window.addEventListener("hashchange", route);
  if (client.restore()) {
    try {
      await client.whoami();
      await start();
      return;
    } catch (err) {
      if (!me && root.querySelector(".signin-form")) return; // the session expired: the sign-in page says so
      signInPage(err.message);
      return;
    }
  }
  signInPage("");
}

boot();
