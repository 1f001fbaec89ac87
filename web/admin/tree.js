// A hierarchical resource as a tree, one level at a time: the roots first
// (the list filtered on <parent>_isnull=true), a node's children when it
// is opened (filtered on <parent>=<id>), a page of them at a time, each
// record with its number of children (children_count=true), so a node
// shows whether it opens without loading the level below.
//
// It follows the WAI-ARIA tree pattern: one item in the tab order, Up and
// Down move through the visible items, Right opens a node (or moves to its
// first child), Left closes it (or moves to its parent), Home and End, and
// Enter or Space show the record beside the tree. Focus stays in the tree.

import * as client from "./client.js";
import { h, fill, srOnly } from "./dom.js";

const PAGE = 100;

export function treeView(pane, res, state, { open }) {
  const top = { id: null, level: 0, children: [], total: 0, open: true, count: 1 };
  const nodes = new Map(); // id -> node, for the nodes drawn
  let selected = null;
  let active = null; // id of the item in the tab order ("more:<id>" for a "show more" item)
  const alert = h("div", { class: "alert", role: "alert" });
  const status = h("p", { class: "summary", role: "status" });
  const tree = h("ul", { class: "tree", role: "tree", "aria-label": res.title, onkeydown: onKey, onclick: onClick });
  fill(pane, alert, status, tree);

  const ordering = res.sortable.has(res.nameKey) ? res.nameKey : "";

  async function fetchChildren(node, page) {
    const query = { children_count: "true", ordering, page_size: PAGE, page };
    if (node.id === null) query[`${res.parent}_isnull`] = "true";
    else query[res.parent] = node.id;
    return (await client.send("GET", res.collection, { query })).data;
  }

  function makeNode(row, level) {
    const count = row.children_count || 0;
    const node = { id: row.id, row, count, level, open: count > 0 && state.open.has(row.id), children: null, total: 0 };
    nodes.set(row.id, node);
    return node;
  }

  // loadChildren reads node's children (as many pages as given), and the
  // children of those of them that are open.
  async function loadChildren(node, pages = 1) {
    const rows = [];
    let total = 0;
    for (let page = 1; page <= pages; page++) {
      const answer = await fetchChildren(node, page);
      total = answer.count;
      rows.push(...answer.data);
      if (rows.length >= total) break;
    }
    node.children = rows.map((row) => makeNode(row, node.level + 1));
    node.total = total;
    await Promise.all(node.children.filter((c) => c.open).map((c) => loadChildren(c)));
  }

  // The tree is drawn as one flat list whose items say their level, size
  // and position (aria-level, aria-setsize, aria-posinset), not as nested
  // groups: an item's accessible name is then its own text (name, code,
  // number of children), never its children's too.
  function moreItem(node) {
    const left = node.total - node.children.length;
    const key = `more:${node.id === null ? "top" : node.id}`;
    const li = h("li", {
      role: "treeitem", class: "more", "aria-level": node.level + 1, tabindex: active === key ? "0" : "-1", "data-more": key,
    }, h("div", { class: "node" }, `Show more (${left} not shown)`));
    li.style.setProperty("--level", String(node.level + 1));
    return li;
  }

  function item(node, pos, size) {
    const row = node.row;
    const li = h("li", {
      role: "treeitem",
      "aria-level": node.level,
      "aria-setsize": size,
      "aria-posinset": pos,
      "aria-expanded": node.count > 0 ? String(node.open) : null,
      "aria-selected": node.id === selected ? "true" : null,
      tabindex: active === String(node.id) ? "0" : "-1",
      "data-id": node.id,
    },
    h("div", { class: "node" },
      h("span", { class: "twisty", "aria-hidden": "true" }, node.count > 0 ? (node.open ? "▾" : "▸") : ""),
      h("span", { class: "node-name" }, row[res.nameKey]), " ",
      h("span", { class: "node-code" }, row[res.code]),
      node.count > 0 && [" ", h("span", { class: "count" }, String(node.count), srOnly(node.count === 1 ? " child" : " children"))]));
    // Indented by a custom property, set through the CSSOM: the page's
    // policy refuses style attributes.
    li.style.setProperty("--level", String(node.level));
    return li;
  }

  // items returns the items of node's children, each followed by its own
  // when open, and a "show more" item when not all are loaded.
  function items(node, out = []) {
    node.children.forEach((c, i) => {
      out.push(item(c, i + 1, node.total));
      if (c.open && c.children) items(c, out);
    });
    if (node.children.length < node.total) out.push(moreItem(node));
    return out;
  }

  // draw draws the whole tree again, keeping focus where it was.
  function draw() {
    const hadFocus = tree.contains(document.activeElement);
    fill(tree, items(top));
    fill(status, `${top.total} top-level ${top.total === 1 ? res.singular : res.title.toLowerCase()}`);
    let current = findItem(active);
    if (!current) {
      current = tree.querySelector("[role=treeitem]");
      active = current && key(current);
    }
    if (current) {
      current.tabIndex = 0;
      if (hadFocus) current.focus();
    }
  }

  function level(li) {
    return Number(li.getAttribute("aria-level"));
  }

  function key(li) {
    return li.dataset.more || li.dataset.id;
  }

  function findItem(k) {
    if (!k) return null;
    return [...tree.querySelectorAll("[role=treeitem]")].find((li) => key(li) === k) || null;
  }

  function focusItem(li) {
    if (!li) return;
    const old = findItem(active);
    if (old) old.tabIndex = -1;
    active = key(li);
    li.tabIndex = 0;
    li.focus();
  }

  async function toggle(node) {
    if (!node.count) return;
    if (node.open) {
      node.open = false;
      state.open.delete(node.id);
      draw();
      return;
    }
    state.open.add(node.id);
    try {
      if (!node.children) await loadChildren(node);
      node.open = true;
      fill(alert);
      draw();
    } catch (err) {
      state.open.delete(node.id);
      fill(alert, err.message);
    }
  }

  async function showMore(k) {
    const node = k === "more:top" ? top : nodes.get(Number(k.slice(5)));
    if (!node) return;
    const before = node.children.length;
    try {
      const answer = await fetchChildren(node, Math.floor(before / PAGE) + 1);
      const known = new Set(node.children.map((c) => c.id));
      node.children.push(...answer.data.filter((row) => !known.has(row.id)).map((row) => makeNode(row, node.level + 1)));
      node.total = answer.count;
      active = node.children[before] ? String(node.children[before].id) : active;
      draw();
      focusItem(findItem(active));
    } catch (err) {
      fill(alert, err.message);
    }
  }

  function onClick(e) {
    const li = e.target.closest("[role=treeitem]");
    if (!li) return;
    focusItem(li);
    if (li.dataset.more) {
      showMore(li.dataset.more);
      return;
    }
    const node = nodes.get(Number(li.dataset.id));
    if (e.target.closest(".twisty")) toggle(node);
    else open(node.id, { keepFocus: true });
  }

  function onKey(e) {
    const li = e.target.closest("[role=treeitem]");
    if (!li) return;
    const items = [...tree.querySelectorAll("[role=treeitem]")];
    const i = items.indexOf(li);
    const node = li.dataset.more ? null : nodes.get(Number(li.dataset.id));
    switch (e.key) {
      case "ArrowDown":
        focusItem(items[i + 1]);
        break;
      case "ArrowUp":
        focusItem(items[i - 1]);
        break;
      case "Home":
        focusItem(items[0]);
        break;
      case "End":
        focusItem(items[items.length - 1]);
        break;
      case "ArrowRight":
        if (node && node.count > 0) {
          if (!node.open) toggle(node);
          else if (items[i + 1] && level(items[i + 1]) === node.level + 1) focusItem(items[i + 1]);
        }
        break;
      case "ArrowLeft":
        if (node && node.open) toggle(node);
        else focusItem(items.slice(0, i).reverse().find((it) => level(it) === level(li) - 1));
        break;
      case "Enter":
      case " ":
        if (li.dataset.more) showMore(li.dataset.more);
        else open(node.id, { keepFocus: true });
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  // refresh reads every drawn level again (after a write); opts.open lists
  // nodes to open first (the parent a record was created or moved under).
  async function refresh(opts = {}) {
    for (const id of opts.open || []) {
      if (id !== null && id !== undefined) state.open.add(id);
    }
    try {
      await loadChildren(top, Math.max(1, Math.ceil(top.children.length / PAGE)));
      fill(alert);
      draw();
    } catch (err) {
      fill(alert, err.message);
    }
  }

  function select(id) {
    selected = id;
    for (const li of tree.querySelectorAll("[aria-selected]")) li.removeAttribute("aria-selected");
    const li = id === null ? null : findItem(String(id));
    if (li) li.setAttribute("aria-selected", "true");
  }

  pane.setAttribute("aria-busy", "true");
  refresh().finally(() => pane.removeAttribute("aria-busy"));
  return { refresh, select };
}
