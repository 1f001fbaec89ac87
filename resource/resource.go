// Package resource is Personnel's generic layer. From a resource's config
// entry (its name, path, table, code, name and parent fields, limits and
// typed extra fields) Register works out the resource's field table once,
// and from it serves every operation of the API: list with paging, filters
// and ordering, read, create, update, partial update and delete, and for
// a hierarchical resource its descendants, ancestors and tree.
//
// Everything that depends on the description (parameter names, JSON keys,
// messages, SQL text) is worked out at registration; a request only parses
// its input into a typed value, makes one store call and renders the typed
// result. Departments and areas are two registrations of this code.
//
// A curl session of one resource (with a token from /jwt-api-token-auth/):
//
//	curl -H "Authorization: JWT $T" 'localhost:8000/personnel/api/departments/?dept_name_icontains=sales&ordering=-dept_code'
//	curl -H "Authorization: JWT $T" -H 'Content-Type: application/json' -d '{"dept_code":"HR","dept_name":"Human Resources"}' localhost:8000/personnel/api/departments/
//	curl -H "Authorization: JWT $T" -H 'Content-Type: application/json' -X PATCH -d '{"parent_dept":1}' localhost:8000/personnel/api/departments/2/
//	curl -H "Authorization: JWT $T" -X DELETE localhost:8000/personnel/api/departments/2/
package resource

import (
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/config"
	"personnel/db"
	"personnel/record"
)

// Options are the settings every resource shares.
type Options struct {
	PageSizeMax   int   // page_size above this is clamped
	BodyLimit     int64 // largest request body in bytes
	ImportLimit   int64 // largest file an import takes, in bytes
	ImportRows    int   // most rows of an imported file
	BulkLimit     int   // most elements of a bulk create
	Links         Links // how absolute URLs are made
	TreeNodeLimit int   // most nodes in one tree answer
	StrictQuery   bool  // a malformed page_size or ordering, or an unknown parameter, is a 400, not ignored
	// CanWrite reports whether the caller of a request may write, which
	// decides whether OPTIONS describes the bodies of writes; nil: anyone.
	CanWrite func(c *gin.Context) bool
	// CanReadAudit reports whether the caller may read the audit trail;
	// nil: anyone.
	CanReadAudit func(c *gin.Context) bool
	// DBTimeout is the database deadline of a request
	// (PERSONNEL_DB_TIMEOUT), for a read after a feed's wait.
	DBTimeout time.Duration
	// Without turns performance mechanisms off (PERSONNEL_WITHOUT), to
	// measure what each wins.
	Without config.Mechanisms
	// Resources are every resource served, among which references find
	// the resource they refer to.
	Resources []config.Resource
}

// DefaultPageSize is the page size when the request gives none.
const DefaultPageSize = 10

// Registry registers resources on one router group (the API root) and
// remembers what it registered.
type Registry struct {
	router    gin.IRouter
	db        *db.DB
	opts      Options
	resources []*Resource
	ops       []Operation
	schemas   map[string]any // of operations that belong to no resource (the audit list)
}

// NewRegistry returns a registry that serves resources on router, stored
// in d.
func NewRegistry(router gin.IRouter, d *db.DB, opts Options) *Registry {
	if opts.PageSizeMax < 1 {
		opts.PageSizeMax = 1000
	}
	if opts.TreeNodeLimit < 1 {
		opts.TreeNodeLimit = DefaultTreeNodeLimit
	}
	if opts.ImportLimit < 1 {
		opts.ImportLimit = 50 << 20
	}
	if opts.ImportRows < 1 {
		opts.ImportRows = 1_000_000
	}
	if opts.BulkLimit < 1 {
		opts.BulkLimit = 1000
	}
	if opts.DBTimeout <= 0 {
		opts.DBTimeout = 5 * time.Second
	}
	return &Registry{router: router, db: d, opts: opts, schemas: map[string]any{}}
}

// Resources returns the registered resources, in registration order.
func (reg *Registry) Resources() []*Resource { return reg.resources }

// Schemas returns the JSON schemas of the bodies of the operations that
// belong to no resource, by name.
func (reg *Registry) Schemas() map[string]any { return reg.schemas }

// Operations returns every operation registered, in registration order:
// what the OpenAPI document is built from, so it lists exactly what is
// served.
func (reg *Registry) Operations() []Operation { return reg.ops }

// Resource serves one reference resource.
type Resource struct {
	desc      config.Resource
	db        *db.DB
	table     *db.Table // the write hook, and what is kept beside the table
	opts      Options
	fields    record.Fields
	keys      []string       // rendered JSON keys, by field
	params    []param        // filter parameters
	sortable  map[string]int // ordering names: field index, -1 for id
	sortNames string         // the ordering names, for messages
	sql       statements

	// sortByTarget are the ordering names of references by their
	// targets' names (department__dept_name): field index.
	sortByTarget map[string]int
	targets      []*target // by field: what a reference refers to (refs.go)
	// crossCounts are the counts of lists with filters through other
	// tables, each with the change numbers it was counted at (refs.go).
	crossCounts *crossCountCache

	// counts holds the counts of searches this replica made, with the
	// change number each is good for (countcache.go).
	counts *countCache
	// msgCodeExists is DRF's message for a duplicate code.
	msgCodeExists string
	// scanners are record.Scanners of fields, kept between queries: a
	// read by id would otherwise make one, and its destinations, each time.
	scanners sync.Pool
}

// Register serves the resource desc on reg's router: the operations of
// newOperations, each also without its trailing slash.
func Register(reg *Registry, desc config.Resource) *Resource {
	r := newResource(desc, reg.db, reg.opts)
	for _, op := range r.operations() {
		h := op.handler()
		gpath := strings.TrimSuffix(strings.ReplaceAll(op.Path, "{id}", ":id"), "/")
		reg.router.Handle(op.Method, gpath, h)
		reg.router.Handle(op.Method, gpath+"/", h)
		if op.ID != "" {
			reg.ops = append(reg.ops, op)
		}
	}
	reg.resources = append(reg.resources, r)
	return r
}

// newResource works out everything about desc that requests need; with no
// database, what parsing, validation and rendering need.
func newResource(desc config.Resource, d *db.DB, opts Options) *Resource {
	r := &Resource{desc: desc, db: d, opts: opts, fields: record.New(desc), counts: &countCache{}, crossCounts: &crossCountCache{}}
	r.keys = newKeys(r.fields)
	r.scanners.New = func() any { return record.NewScanner(r.fields) }
	r.targets = newTargets(desc, r.fields, opts.Resources)
	r.params = append(newParams(r.fields), r.refParams()...)
	r.sortable = map[string]int{"id": -1}
	names := []string{"id"}
	for i, f := range r.fields.List {
		if f.Sortable {
			r.sortable[f.Key] = i
			names = append(names, f.Key)
		}
	}
	r.sortByTarget = r.targetOrderings()
	for _, i := range r.fields.Refs() {
		for name, j := range r.sortByTarget {
			if i == j {
				names = append(names, name)
			}
		}
	}
	r.sortNames = strings.Join(names, ", ")
	r.msgCodeExists = desc.Name + " with this " + r.fields.List[r.fields.Code].Key + " already exists."
	if d != nil {
		r.table = d.Table(desc)
		r.sql = r.newStatements()
	}
	return r
}

// Resource returns the config entry r serves.
func (r *Resource) Resource() config.Resource { return r.desc }
