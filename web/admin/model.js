// What the UI offers, read from the OpenAPI document the service serves:
// one description per resource (its fields, filters, ordering and
// operations), with no code per resource. A resource is a record schema
// marked x-resource (its name, path, and which keys are its code, name and
// parent); its operations are found by the shape of their paths below the
// resource's collection, so an operation the service does not serve is
// simply not offered. Operations the UI knows by shape:
//
//   list GET /, create POST /, read GET {id}/, patch PATCH {id}/,
//   delete DELETE {id}/, tree GET tree/, ancestors GET {id}/ancestors/,
//   descendants GET {id}/descendants/, export GET export/,
//   import POST import/, history GET {id}/history/
//
// and, for the whole service, audit (operationId listAudit).

import { API } from "./client.js";
import { humanize } from "./dom.js";

const SHAPES = {
  list: "get ",
  create: "post ",
  read: "get {id}/",
  update: "put {id}/",
  patch: "patch {id}/",
  delete: "delete {id}/",
  tree: "get tree/",
  ancestors: "get {id}/ancestors/",
  descendants: "get {id}/descendants/",
  export: "get export/",
  import: "post import/",
  history: "get {id}/history/",
};

// Filter suffixes, as the list names its parameters (<key>_<suffix>; the
// exact filter is the bare key).
const SUFFIXES = ["icontains", "gte", "lte", "isnull", "in", "under"];

// Parameters that are not filters.
const NOT_FILTERS = new Set(["page", "page_size", "ordering", "children_count", "search"]);

function deref(doc, schema) {
  let s = schema;
  while (s && s.$ref) {
    s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")];
  }
  return s || {};
}

function kindOf(key, prop, parentKey) {
  if (key === parentKey) return "parent";
  if (prop["x-personnel-ref"]) return prop.type === "array" ? "refs" : "ref";
  if (Array.isArray(prop.enum)) return "choice";
  if (prop.type === "integer") return "integer";
  if (prop.type === "boolean") return "boolean";
  if (prop.type === "string" && prop.format === "date") return "date";
  return "text";
}

// describe returns the resources of the document, by title.
export function describe(doc) {
  const out = [];
  for (const schema of Object.values(doc.components.schemas)) {
    const x = schema["x-resource"];
    if (!x) continue;
    const base = `${API}/${x.path}/`;
    const byShape = {};
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith(base)) continue;
      for (const [method, op] of Object.entries(item)) {
        byShape[`${method} ${path.slice(base.length)}`] = op;
      }
    }
    const ops = {};
    for (const [name, shape] of Object.entries(SHAPES)) {
      if (byShape[shape]) ops[name] = byShape[shape];
    }
    if (!ops.list || !ops.read) continue;
    const create = ops.create ? deref(doc, ops.create.requestBody.content["application/json"].schema) : {};
    const fields = [];
    for (const key of schema.required || []) {
      if (key === "id") continue;
      const prop = schema.properties[key] || {};
      const write = (create.properties || {})[key] || {};
      fields.push({
        key,
        label: humanize(key),
        kind: kindOf(key, prop, x.parent_field),
        maxLength: prop.maxLength,
        min: prop.minimum,
        max: prop.maximum,
        choices: prop.enum,
        nullable: Boolean(write.nullable),
        required: (create.required || []).includes(key),
        default: write.default,
        description: prop.description || "",
        refPath: prop["x-personnel-ref"] || null,
        target: null, // the resource referred to, set below
      });
    }
    const byKey = new Map(fields.map((f) => [f.key, f]));
    const params = (ops.list.parameters || []).filter((p) => p.in === "query");
    const filters = [];
    for (const p of params) {
      if (NOT_FILTERS.has(p.name)) continue;
      let field = byKey.get(p.name);
      let op = "exact";
      if (!field) {
        for (const suffix of SUFFIXES) {
          const key = p.name.slice(0, -(suffix.length + 1));
          if (p.name.endsWith(`_${suffix}`) && byKey.has(key)) {
            field = byKey.get(key);
            op = suffix;
            break;
          }
        }
      }
      if (field) filters.push({ param: p.name, field, op });
    }
    const ordering = params.find((p) => p.name === "ordering");
    const plural = humanize(x.path);
    out.push({
      name: x.name,
      path: x.path,
      title: plural,
      singular: humanize(x.name).toLowerCase(),
      collection: base,
      item: (id) => `${base}${encodeURIComponent(id)}/`,
      code: x.code_field,
      nameKey: x.name_field,
      parent: x.parent_field || null,
      fields,
      byKey,
      ops,
      filters,
      search: params.some((p) => p.name === "search"),
      // The references a list (and a read) can show as records, set below.
      expand: [],
      canExpand: params.some((p) => p.name === "expand"),
      sortable: new Set((ordering && ordering.schema && ordering.schema["x-ordering-fields"]) || []),
      countsChildren: params.some((p) => p.name === "children_count"),
    });
  }
  // A reference's target, once every resource is known. The service names
  // only resources it serves, each with a list and a read.
  const byPath = new Map(out.map((r) => [r.path, r]));
  for (const res of out) {
    for (const f of res.fields) {
      if (!f.refPath) continue;
      f.target = byPath.get(f.refPath) || null;
      if (f.target && res.canExpand) res.expand.push(f.key);
    }
  }
  return out.sort((a, b) => a.title.localeCompare(b.title));
}

// label is how a record is named in lists, headings and pickers.
export function label(res, row) {
  return `${row[res.nameKey]} (${row[res.code]})`;
}
