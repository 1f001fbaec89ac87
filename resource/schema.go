package resource

import (
	"fmt"
	"personnel/record"
	"strings"
)

// obj is a JSON object of the OpenAPI document.
type obj = map[string]any

// fieldSchema is the JSON schema of a value of f, as rendered.
func fieldSchema(f *record.Field) obj {
	var s obj
	switch f.Kind {
	case record.KindText:
		s = obj{"type": "string", "maxLength": f.MaxLen}
		if !f.Nullable {
			s["minLength"] = 1
		}
	case record.KindChoice:
		s = obj{"type": "string", "enum": f.Choices}
	case record.KindInteger:
		s = obj{"type": "integer", "format": "int64"}
		if f.Min != nil {
			s["minimum"] = *f.Min
		}
		if f.Max != nil {
			s["maximum"] = *f.Max
		}
	case record.KindBoolean:
		s = obj{"type": "boolean"}
	case record.KindDate:
		s = obj{"type": "string", "format": "date"}
	case record.KindParent, record.KindRef:
		s = obj{"type": "integer", "minimum": 1}
	case record.KindRefs:
		s = obj{"type": "array", "items": obj{"type": "integer", "minimum": 1}}
	}
	// A required extra field is null in records stored before it was
	// added (or loaded in bulk), so every field but code and name may be.
	if f.Nullable || !f.Replaced {
		s["nullable"] = true
	}
	if f.Doc != "" {
		s["description"] = f.Doc
	}
	return s
}

// writeSchema is the JSON schema of f in a request body: what DecodeInput
// accepts.
func writeSchema(f *record.Field, mode Mode) obj {
	s := fieldSchema(f)
	if !f.Nullable {
		delete(s, "nullable") // null is refused
	}
	var doc []string
	switch f.Kind {
	case record.KindText:
		doc = append(doc, fmt.Sprintf("Trimmed of surrounding white space, then at most %d characters.", f.MaxLen))
		delete(s, "maxLength") // counted after trimming
	case record.KindParent:
		s = obj{"type": "integer", "nullable": true}
		doc = append(doc, "The id of the parent; null clears it. It must exist, and must be neither the record itself nor below it. A string of digits is accepted too.")
	case record.KindRef, record.KindRefs:
		s = refWriteSchema(f)
		doc = append(doc, s["description"].(string))
	case record.KindInteger:
		doc = append(doc, "A string of digits is accepted too.")
	case record.KindBoolean:
		doc = append(doc, `1, 0 and Django REST Framework's strings are accepted too: "true", "on", "yes", "y", "t", "1" `+
			`and "false", "off", "no", "n", "f", "0", each also capitalised or in capitals.`)
	}
	if f.Doc != "" && f.Kind != record.KindParent && !f.IsRef() {
		doc = append(doc, f.Doc)
	}
	if mode != ModeCreate && !f.Replaced || mode == ModeCreate && !f.Required && f.Default.Valid {
		if mode == ModeCreate {
			doc = append(doc, "Omitted: the default.")
		} else {
			doc = append(doc, "Omitted: kept as it is.")
		}
	}
	if mode == ModeCreate && f.Default.Valid {
		s["default"] = defaultJSON(f)
	}
	if len(doc) > 0 {
		s["description"] = strings.Join(doc, " ")
	}
	return s
}

func defaultJSON(f *record.Field) any {
	switch f.Kind {
	case record.KindInteger:
		return f.Default.Int
	case record.KindBoolean:
		return f.Default.Int == 1
	case record.KindRefs:
		return []int64{}
	}
	return f.Default.Str
}

// Schemas returns the JSON schemas of r's bodies, by name: the record, its
// create, replace and patch bodies, the list page, and for a hierarchy the
// tree node and tree.
func (r *Resource) Schemas() map[string]any {
	one := camel(r.desc.Name)
	record := obj{"id": obj{"type": "integer", "minimum": 1}}
	required := []string{"id"}
	for i := range r.fields.List {
		f := &r.fields.List[i]
		record[f.Key] = fieldSchema(f)
		if f.IsRef() {
			record[f.Key] = r.refSchema(i, f)
		}
		required = append(required, f.Key)
	}
	s := map[string]any{
		one: obj{"type": "object", "required": required, "properties": record, "x-resource": r.describe()},
	}
	for _, b := range []struct {
		name string
		mode Mode
		doc  string
	}{
		{"Create", ModeCreate, "record.Fields the resource does not have (id among them) are ignored."},
		{"Replace", ModeReplace, "Code and name are required; other fields omitted are kept."},
		{"Patch", ModePatch, "Only the fields given change; {} changes nothing."},
	} {
		props, req := obj{}, []string{}
		for i := range r.fields.List {
			f := &r.fields.List[i]
			props[f.Key] = writeSchema(f, b.mode)
			if b.mode == ModeCreate && f.Required || b.mode == ModeReplace && f.Replaced {
				req = append(req, f.Key)
			}
		}
		body := obj{"type": "object", "properties": props, "description": b.doc}
		if len(req) > 0 {
			body["required"] = req
		}
		s[one+b.name] = body
	}
	link := obj{"type": "string", "format": "uri", "nullable": true}
	envelope := func(data obj, paged bool) obj {
		props := obj{
			"msg":  obj{"type": "string", "enum": []string{""}},
			"code": obj{"type": "integer", "enum": []int{0}},
			"data": data,
		}
		req := []string{"msg", "code", "data"}
		if paged {
			props["count"] = obj{"type": "integer", "minimum": 0, "description": "Records matching the filters."}
			props["next"], props["previous"] = link, link
			req = append([]string{"count", "next", "previous"}, req...)
		}
		return obj{"type": "object", "required": req, "properties": props}
	}
	r.refSchemas(s)
	ref := func(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }
	s[one+"File"] = r.fileSchema()
	s[one+"Page"] = envelope(obj{"type": "array", "items": ref(one)}, true)
	s[one+"Changes"] = changesSchema(one)
	if r.fields.Hierarchical() {
		node := obj{"children": obj{"type": "array", "items": ref(one + "Node")}}
		for k, v := range record {
			node[k] = v
		}
		record[ChildrenCountParam] = obj{"type": "integer", "minimum": 0,
			"description": "How many records have this one as parent: only in a list or descendants asked with children_count=true."}
		s[one+"Node"] = obj{"type": "object", "required": append(required, "children"), "properties": node}
		s[one+"Tree"] = envelope(obj{"type": "array", "items": ref(one + "Node")}, false)
	}
	return s
}

// fileSchema is the JSON form of an export's and an import's file.
func (r *Resource) fileSchema() obj {
	props := obj{"id": obj{"type": "integer", "description": "Ignored by an import."}}
	for i := range r.fields.List {
		f := &r.fields.List[i]
		switch {
		case i == r.fields.Parent:
			props[r.ParentCodeColumn()] = obj{"type": "string", "nullable": true, "description": "The parent's code; null or empty for a root."}
		case r.codeColumn(i) != "" && f.Kind == record.KindRefs:
			props[r.codeColumn(i)] = obj{"oneOf": []obj{{"type": "string"}, {"type": "array", "items": obj{"type": "string"}}},
				"description": fmt.Sprintf(`The codes (%s) of the %s records referred to: an array of codes, or (as CSV and XLSX cells hold them) one string of codes separated by ";", a ";" or "\" within a code escaped by a "\". An export writes the array.`,
					r.targets[i].code().Key, f.To)}
			props[f.Key] = obj{"type": "array", "items": obj{"type": "integer"},
				"description": fmt.Sprintf("Import only, instead of %s: the ids.", r.codeColumn(i))}
		case r.codeColumn(i) != "":
			props[r.codeColumn(i)] = obj{"type": "string", "nullable": true, "description": fmt.Sprintf(
				"The code (%s) of the %s referred to; null or empty for none.", r.targets[i].code().Key, f.To)}
			props[f.Key] = obj{"type": "integer", "nullable": true,
				"description": fmt.Sprintf("Import only, instead of %s: the id.", r.codeColumn(i))}
		case f.Kind == record.KindRefs:
			props[f.Key] = obj{"type": "array", "items": obj{"type": "integer"}}
		default:
			sch := fieldSchema(f)
			props[f.Key] = sch
		}
	}
	return obj{"type": "array", "items": obj{"type": "object", "properties": props},
		"description": "One object a record, with the columns of the CSV and XLSX forms: id, code, name, the parent's code, the extra fields (references by their records' codes)."}
}

// listParams are the query parameters of a list (and of descendants).
func (r *Resource) listParams() []Param {
	ps := []Param{
		{Name: "page", In: "query", Doc: "Page number from 1, read as Python's int() reads it (as Django's paginator does: \"+2\" and \" 2 \" are 2), or `last`. " +
			"A page that is not one, or past the last, is a 404.",
			Schema: obj{"type": "string"}},
		{Name: "page_size", In: "query", Doc: fmt.Sprintf("Records per page (default %d), read as Python's int() reads it (\"+1\", \" 1 \" and \"1_0\" are 1, 1 and 10); "+
			"above %d is clamped; not a positive integer: the default (strict mode: 400).", DefaultPageSize, r.opts.PageSizeMax),
			Schema: obj{"type": "string"}},
	}
	what := map[record.Op]string{
		record.OpExact: "equal to this (text: exact and case-sensitive)", record.OpIContains: "containing this, ignoring letter case (all of Unicode); % and _ are literal",
		record.OpGTE: "at least this", record.OpLTE: "at most this", record.OpIsNull: "true: only records without a value; false: only records with one",
	}
	for _, p := range r.params {
		if strings.Contains(p.name, "__") {
			continue // Django's spelling, named in the description of ours
		}
		f := &r.fields.List[p.field]
		if f.IsRef() {
			doc, schema := r.refParamDoc(p, f)
			ps = append(ps, Param{Name: p.name, In: "query", Doc: doc, Schema: schema})
			continue
		}
		doc := f.Key + " " + what[p.op] + "."
		schema := obj{"type": "string"}
		switch {
		case p.op == record.OpIsNull || f.Kind == record.KindBoolean:
			// A pattern, not an enum: client generators make a type of
			// each enum, and both spellings of a filter would clash.
			schema = obj{"type": "string", "pattern": "^(|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$"}
			doc += " true, false, 1 or 0, in any letter case."
		case f.Kind == record.KindChoice:
			doc += " One of " + strings.Join(f.Choices, ", ") + "; any other value is a 400."
		case f.Kind == record.KindParent:
			doc = "Records whose " + f.Key + " is this id."
		case f.Kind == record.KindInteger:
			schema = obj{"type": "string", "pattern": "^(-?[0-9]+)?$"}
		case f.Kind == record.KindDate:
			schema = obj{"type": "string", "pattern": `^([0-9]{4}-[0-9]{2}-[0-9]{2})?$`}
		}
		if p.op == record.OpIsNull && f.Kind == record.KindParent {
			doc = "true: only roots; false: only records with a parent."
		}
		if django := f.Key + "__" + strings.TrimPrefix(p.name, f.Key+"_"); p.op != record.OpExact {
			doc += " Also spelled " + django + "."
		}
		ps = append(ps, Param{Name: p.name, In: "query", Doc: doc, Schema: schema})
	}
	if r.fields.Hierarchical() {
		ps = append(ps, Param{Name: ChildrenCountParam, In: "query",
			Doc:    "true: each record also carries children_count, how many records have it as parent.",
			Schema: obj{"type": "string", "pattern": "^(|true|false|True|False|1|0)$"}})
	}
	var searched []string
	for i := range r.fields.List {
		if r.fields.List[i].Has(record.OpIContains) {
			searched = append(searched, r.fields.List[i].Key)
		}
	}
	ps = append(ps, Param{Name: "search", In: "query",
		Doc: "Terms separated by spaces or commas (a double-quoted phrase is one term); each must appear, ignoring letter case, in " +
			strings.Join(searched, ", ") + ". Combines with the filters.",
		Schema: obj{"type": "string"}})
	ps = append(ps, r.throughParams()...)
	ps = append(ps, Param{Name: "ordering", In: "query",
		Doc: "Comma-separated fields from " + r.sortNames + "; a leading - sorts descending. " +
			"Text sorts ignoring letter case, then by exact value; id breaks ties in the direction of the last field. " +
			"Unknown and repeated terms are dropped (strict mode: 400).",
		// The names again as a list, for programs (the admin UI) that offer them.
		Schema: obj{"type": "string", "x-ordering-fields": strings.Split(r.sortNames, ", ")}})
	return ps
}

// describe says which of a record's fields are its code, name and parent,
// and which resource it is, for programs that present any resource (the
// admin UI): the record schema's x-resource.
func (r *Resource) describe() obj {
	d := obj{"name": r.desc.Name, "path": r.desc.Path,
		"code_field": r.fields.List[r.fields.Code].Key, "name_field": r.fields.List[r.fields.Name].Key}
	if r.fields.Hierarchical() {
		d["parent_field"] = r.fields.List[r.fields.Parent].Key
	}
	return d
}
