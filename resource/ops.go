package resource

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/jsonbody"
	"personnel/record"
)

// Operation is one operation of a resource: its route, its handler and its
// OpenAPI entry, from one value, so the document describes exactly what is
// served.
type Operation struct {
	ID       string // operationId: listDepartments, readDepartment, departmentTree...; "" for an answer that is not an operation (405)
	Method   string
	Path     string // below the API root, {id} for the record id, with its trailing slash
	Tag      string // the resource's path, which groups its operations
	Summary  string
	Params   []Param
	Body     string // schema of the request body; "" for none
	Status   int    // success status
	Response string // schema of the success body; "" for none
	Headers  []string
	Errors   string // the error statuses it may answer, for people
	// Produces are the media types of the success body when it is not
	// JSON of Response (an export's files); Consumes those of the request
	// body when it is not JSON of Body (an import's files).
	Produces, Consumes []string
	handle             func(c *gin.Context) error
}

// Param is a parameter of an operation.
type Param struct {
	Name     string
	In       string // "path", "query" or "header"
	Required bool
	Doc      string
	Schema   map[string]any
}

// handler adapts op's handler, which returns an error, to gin: the one
// place where an operation's error is written.
func (op Operation) handler() gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := op.handle(c); err != nil {
			apierror.Write(c.Request.Context(), c.Writer, err)
			c.Abort()
		}
	}
}

// camel turns "cost_centre" or "cost-centres" into "CostCentre(s)".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// operations lists r's operations.
func (r *Resource) operations() []Operation {
	one, many := camel(r.desc.Name), camel(r.desc.Path)
	lower := strings.ToLower(one[:1]) + one[1:]
	coll, item, tree := "/"+r.desc.Path+"/", "/"+r.desc.Path+"/{id}/", "/"+r.desc.Path+"/tree/"
	id := Param{Name: "id", In: "path", Required: true, Doc: "The id of a " + r.desc.Name + "; anything else is a 404.",
		Schema: map[string]any{"type": "integer", "minimum": 1}}
	ifMatch := Param{Name: "If-Match", In: "header", Doc: "Apply only if the record's ETag is one of these (`*`: any existing record); else 412.",
		Schema: map[string]any{"type": "string"}}
	writeErrors := "400 invalid fields (duplicate code, missing or circular parent), 401, 403 a viewer, 404, 412 stale If-Match, 413, 415"
	ops := []Operation{
		{ID: "list" + many, Method: http.MethodGet, Path: coll, Summary: "List " + r.desc.Path + ".",
			Params: append(r.listParams(), r.expandParam()...), Status: http.StatusOK, Response: one + "Page", Headers: []string{ChangesCursorHeader},
			Errors: "400 malformed parameter, 401, 404 invalid page", handle: r.handleList},
		{ID: "create" + one, Method: http.MethodPost, Path: coll,
			Summary: "Create a " + r.desc.Name + "; a JSON array creates every element or none (201 with the array).",
			Body:    one + "Create", Status: http.StatusCreated, Response: one, Headers: []string{"ETag", "Location"},
			Errors: writeErrors, handle: r.handleCreate},
	}
	if r.fields.Hierarchical() {
		ops = append(ops, Operation{ID: lower + "Tree", Method: http.MethodGet, Path: tree,
			Summary: "Records nested with their children (siblings by id).",
			Params: append([]Param{
				{Name: "root", In: "query", Doc: "The id of the subtree's root; none: the whole forest.", Schema: map[string]any{"type": "integer", "minimum": 1}},
				{Name: "depth", In: "query", Doc: "Levels below the roots; 0: the roots alone.", Schema: map[string]any{"type": "integer", "minimum": 0}},
			}, r.expandParam()...),
			Status: http.StatusOK, Response: one + "Tree",
			Errors: fmt.Sprintf("400 more than %d nodes (ask for a root or a depth) or a malformed parameter, 401, 404 no such root", r.opts.TreeNodeLimit),
			handle: r.handleTree})
		// Without these, gin would take "tree" for an id of the item routes.
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			ops = append(ops, Operation{Method: m, Path: tree, handle: onlyGET})
		}
	}
	ops = append(ops, r.fileOperations(one, many)...)
	ops = append(ops,
		Operation{ID: "read" + one, Method: http.MethodGet, Path: item, Summary: "Read a " + r.desc.Name + ".",
			Params: append([]Param{id}, r.expandParam()...), Status: http.StatusOK, Response: one, Headers: []string{"ETag"},
			Errors: "400 unknown expand, 401, 404", handle: r.handleRead},
		Operation{ID: "update" + one, Method: http.MethodPut, Path: item,
			Summary: "Replace a " + r.desc.Name + " (fields other than code and name are kept when omitted).",
			Params:  []Param{id, ifMatch}, Body: one + "Replace", Status: http.StatusOK, Response: one, Headers: []string{"ETag"},
			Errors: writeErrors, handle: func(c *gin.Context) error { return r.update(c, ModeReplace) }},
		Operation{ID: "patch" + one, Method: http.MethodPatch, Path: item, Summary: "Change some fields of a " + r.desc.Name + ".",
			Params: []Param{id, ifMatch}, Body: one + "Patch", Status: http.StatusOK, Response: one, Headers: []string{"ETag"},
			Errors: writeErrors, handle: func(c *gin.Context) error { return r.update(c, ModePatch) }},
		Operation{ID: "delete" + one, Method: http.MethodDelete, Path: item, Summary: "Delete a " + r.desc.Name + ".",
			Params: []Param{id, ifMatch}, Status: http.StatusNoContent,
			Errors: "401, 403, 404, 409 still a parent, 412", handle: r.handleDelete},
	)
	if r.fields.Hierarchical() {
		ops = append(ops,
			Operation{ID: lower + "Descendants", Method: http.MethodGet, Path: item + "descendants/",
				Summary: "Every " + r.desc.Name + " below one, at any depth; the list parameters apply.",
				Params:  append(append([]Param{id}, r.listParams()...), r.expandParam()...), Status: http.StatusOK, Response: one + "Page",
				Errors: "400, 401, 404", handle: r.handleDescendants},
			Operation{ID: lower + "Ancestors", Method: http.MethodGet, Path: item + "ancestors/",
				Summary: "The " + r.desc.Path + " above one, from the root down to its parent; not paged.",
				Params:  append([]Param{id}, r.expandParam()...), Status: http.StatusOK, Response: one + "Page",
				Errors: "400 unknown expand, 401, 404", handle: r.handleAncestors},
		)
	}
	ops = append(ops, r.historyOperation(lower, item, id))
	ops = append(ops, r.feedOperations(one, lower)...)
	ops = append(ops, r.describeOperations(ops, func(path string) string {
		switch path {
		case coll:
			return "List"
		case item:
			return "Instance"
		}
		p := strings.TrimSuffix(path, "/")
		return camel(p[strings.LastIndexByte(p, '/')+1:])
	})...)
	for i := range ops {
		ops[i].Tag = r.desc.Path
	}
	return ops
}

// The handlers only move values between HTTP and the typed operations:
// parse, call, render. They return errors; Operation.handler writes them.

func (r *Resource) handleList(c *gin.Context) error {
	values := c.Request.URL.Query()
	q, err := r.ParseQuery(values, ChildrenCountParam, expandParam)
	if err != nil {
		return err
	}
	counted, err := r.parseChildrenCount(values)
	if err != nil {
		return err
	}
	expand, err := r.parseExpand(values)
	if err != nil {
		return err
	}
	// Read before the page, so that whatever the page holds is at or
	// before it in the feed.
	cursor, err := r.feedCursor(c.Request.Context())
	if err != nil {
		return r.storeError(err)
	}
	if cursor != "" {
		c.Header(ChangesCursorHeader, cursor)
	}
	p, err := r.List(c.Request.Context(), q)
	if err != nil {
		return err
	}
	return r.writePage(c, p, counted, expand)
}

// writePage renders a page in the list envelope, with links to its
// neighbours, each record's number of children when counted, and the
// references of expand expanded.
func (r *Resource) writePage(c *gin.Context, p Page, counted bool, expand []int) error {
	ex, err := r.expand(c.Request.Context(), expand, p.Rows)
	if err != nil {
		return r.storeError(err)
	}
	var next, previous string
	if p.Page < p.LastPage() {
		next = r.opts.Links.Page(c.Request, p.Page+1)
	}
	if p.Page > 1 {
		previous = r.opts.Links.Page(c.Request, p.Page-1)
	}
	var counts map[int]int
	if counted {
		if counts, err = r.ChildrenCounts(c.Request.Context(), p.Rows); err != nil {
			return err
		}
	}
	body := r.appendEnvelope(make([]byte, 0, 128+96*len(p.Rows)), p.Count, next, previous, p.Rows, ex, counts)
	c.Data(http.StatusOK, "application/json", body)
	return nil
}

func (r *Resource) handleDescendants(c *gin.Context) error {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	values := c.Request.URL.Query()
	q, err := r.ParseQuery(values, ChildrenCountParam, expandParam)
	if err != nil {
		return err
	}
	counted, err := r.parseChildrenCount(values)
	if err != nil {
		return err
	}
	expand, err := r.parseExpand(values)
	if err != nil {
		return err
	}
	p, err := r.Descendants(c.Request.Context(), id, q)
	if err != nil {
		return err
	}
	return r.writePage(c, p, counted, expand)
}

func (r *Resource) handleAncestors(c *gin.Context) error {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	expand, err := r.parseExpand(c.Request.URL.Query())
	if err != nil {
		return err
	}
	rows, err := r.Ancestors(c.Request.Context(), id)
	if err != nil {
		return err
	}
	ex, err := r.expand(c.Request.Context(), expand, rows)
	if err != nil {
		return r.storeError(err)
	}
	c.Data(http.StatusOK, "application/json", r.appendEnvelope(make([]byte, 0, 128+96*len(rows)), len(rows), "", "", rows, ex, nil))
	return nil
}

func (r *Resource) handleTree(c *gin.Context) error {
	values := c.Request.URL.Query()
	tq, err := ParseTreeQuery(values)
	if err := joinInvalid(err, r.CheckParams(values, "root", "depth", expandParam)); err != nil {
		return err
	}
	expand, err := r.parseExpand(values)
	if err != nil {
		return err
	}
	nodes, err := r.Tree(c.Request.Context(), tq, r.opts.TreeNodeLimit)
	if err != nil {
		return err
	}
	ex, err := r.expand(c.Request.Context(), expand, treeRows(nodes, nil))
	if err != nil {
		return r.storeError(err)
	}
	b := append(make([]byte, 0, 4096), `{"code":0,"msg":"","data":`...)
	b = append(r.appendNodes(b, nodes, ex), '}')
	c.Data(http.StatusOK, "application/json", b)
	return nil
}

// onlyGET answers a method the tree path does not have.
func onlyGET(c *gin.Context) error { return only(c, http.MethodGet) }

// only answers a method a path without an id does not have (gin would
// take the path for an id of the item routes otherwise).
func only(c *gin.Context, method string) error {
	c.Header("Allow", AllowHeader([]string{method, http.MethodOptions}))
	return apierror.New(apierror.MethodNotAllowed, fmt.Sprintf("Method %q not allowed.", c.Request.Method))
}

// fileOperations are the export and import of r's records as files.
func (r *Resource) fileOperations(one, many string) []Operation {
	export, imp := "/"+r.desc.Path+"/export/", "/"+r.desc.Path+"/import/"
	flag := map[string]any{"type": "boolean"}
	ops := []Operation{
		{ID: "export" + many, Method: http.MethodGet, Path: export,
			Summary: "Every " + r.desc.Name + " the list's filters select, in its ordering, as a file (not paged).",
			Params: append(r.listParams(), Param{Name: "format", In: "query", Doc: "csv (the default), xlsx or json.",
				Schema: map[string]any{"type": "string", "enum": []string{"csv", "xlsx", "json"}}}),
			Status: http.StatusOK, Response: one + "File", Headers: []string{"Content-Disposition"},
			Produces: []string{"text/csv", tabularXLSX, "application/json"},
			Errors:   "400 malformed parameter, 401", handle: r.handleExport},
		{ID: "import" + many, Method: http.MethodPost, Path: imp,
			Summary: "Create and update " + r.desc.Path + " from a file (upsert by code), all or nothing.",
			Params: []Param{
				{Name: "mode", In: "query", Doc: "upsert (the default) or create (a row whose code exists is an error).",
					Schema: map[string]any{"type": "string", "enum": []string{"upsert", "create"}}},
				{Name: "dry_run", In: "query", Doc: "Check and count, write nothing.", Schema: flag},
				{Name: "delete_missing", In: "query", Doc: "Also delete the records whose codes the file lacks.", Schema: flag},
			},
			Body: one + "File", Consumes: []string{"text/csv", tabularXLSX, "application/json", "multipart/form-data"},
			Status: http.StatusOK, Response: "ImportResult",
			Errors: "400 invalid rows (under rows) or columns, 401, 403 a viewer, 413 too large, 415", handle: r.handleImport},
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		ops = append(ops, Operation{Method: m, Path: export, handle: func(c *gin.Context) error { return only(c, http.MethodGet) }})
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		ops = append(ops, Operation{Method: m, Path: imp, handle: func(c *gin.Context) error { return only(c, http.MethodPost) }})
	}
	return ops
}

// tabularXLSX is the media type of an XLSX file.
const tabularXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

func (r *Resource) handleRead(c *gin.Context) error {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	var query url.Values // none, most often: not even a map to make
	if c.Request.URL.RawQuery != "" {
		query = c.Request.URL.Query()
	}
	expand, err := r.parseExpand(query)
	if err != nil {
		return err
	}
	row, err := r.Get(c.Request.Context(), id)
	if err != nil {
		return err
	}
	ex, err := r.expand(c.Request.Context(), expand, []record.Row{row})
	if err != nil {
		return r.storeError(err)
	}
	// The tag of the record's state, expanded or not: If-Match compares
	// it with the record's.
	setETag(c, r.ETag(row))
	writeJSON(c, http.StatusOK, r.appendRecord(make([]byte, 0, 128), row, ex))
	return nil
}

// setETag sets the answer's ETag header, under the key net/http
// canonicalises it to ("Etag"): Header.Set would make that string anew
// for every answer.
func setETag(c *gin.Context, tag string) { c.Writer.Header()["Etag"] = []string{tag} }

// jsonContentType is the Content-Type of JSON answers, one slice shared by
// every answer (net/http only reads it), so that writing it allocates
// nothing.
var jsonContentType = []string{"application/json"}

// writeJSON answers status with body, a JSON document: gin's c.Data
// without the slice it makes for the Content-Type of every answer.
func writeJSON(c *gin.Context, status int, body []byte) {
	h := c.Writer.Header()
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentType
	}
	c.Status(status)
	_, _ = c.Writer.Write(body)
}

func (r *Resource) handleCreate(c *gin.Context) error {
	if data, isList := r.bodyList(c.Request); isList {
		return r.handleBulkCreate(c, data)
	}
	in, err := r.readInput(c, ModeCreate)
	if err != nil {
		return err
	}
	row, err := r.Create(c.Request.Context(), in)
	if err != nil {
		return err
	}
	c.Header("Location", r.opts.Links.Record(c.Request, row.ID))
	setETag(c, r.ETag(row))
	c.Data(http.StatusCreated, "application/json", r.appendRecord(make([]byte, 0, 128), row, nil))
	return nil
}

func (r *Resource) update(c *gin.Context, mode Mode) error {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	in, err := r.readInput(c, mode)
	if err != nil {
		// As in Django REST Framework, a missing record is a 404 whatever
		// the body; the look-up costs nothing on the path that succeeds.
		if _, gerr := r.Get(c.Request.Context(), id); gerr != nil {
			return gerr
		}
		return err
	}
	row, err := r.Update(c.Request.Context(), id, in, ParsePrecondition(c.Request.Header.Values("If-Match")))
	if err != nil {
		return err
	}
	setETag(c, r.ETag(row))
	c.Data(http.StatusOK, "application/json", r.appendRecord(make([]byte, 0, 128), row, nil))
	return nil
}

func (r *Resource) handleDelete(c *gin.Context) error {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	if err := r.Delete(c.Request.Context(), id, ParsePrecondition(c.Request.Header.Values("If-Match"))); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (r *Resource) readInput(c *gin.Context, mode Mode) (Input, error) {
	m, err := jsonbody.Object(c.Request, r.opts.BodyLimit)
	if err != nil {
		return Input{}, err
	}
	return r.DecodeInput(m, mode)
}

// parseID parses a path id: ASCII digits naming a positive int. Anything
// else names no record.
func parseID(s string) (int, bool) {
	n, ok := positiveInt(s)
	return n, ok && n != math.MaxInt
}
