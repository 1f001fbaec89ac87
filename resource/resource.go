// Package resource is Personnel's generic layer. From a resource's
// description (config.Resource: name, path, field names, limits) and the
// store adapter Ent generates for its entity, Register serves every
// operation of the API for it: list with paging, filters and ordering,
// read, create, update, partial update and delete.
//
// Everything that depends on the description (parameter names, JSON keys,
// messages, SQL text) is worked out once, at registration; a request only
// parses its input into a typed value, makes one store call and renders the
// typed result. Departments and areas are two registrations of this code.
//
// A curl session of one resource (with a token from /jwt-api-token-auth/):
//
//	curl -H "Authorization: JWT $T" 'localhost:8000/personnel/api/departments/?dept_name_icontains=sales&ordering=-dept_code'
//	curl -H "Authorization: JWT $T" -H 'Content-Type: application/json' -d '{"dept_code":"HR","dept_name":"Human Resources"}' localhost:8000/personnel/api/departments/
//	curl -H "Authorization: JWT $T" -H 'Content-Type: application/json' -X PATCH -d '{"parent_dept":1}' localhost:8000/personnel/api/departments/2/
//	curl -H "Authorization: JWT $T" -X DELETE localhost:8000/personnel/api/departments/2/
package resource

import (
	"context"
	"net/http"
	"strings"

	"entgo.io/ent/dialect/sql"
	"github.com/gin-gonic/gin"

	"personnel/config"
	"personnel/db"
	"personnel/ent"
)

// Adapter is the store adapter Ent generates for every hierarchical entity
// (ent/template/hierarchy.tmpl): ent's typed builders behind one uniform
// set of methods, so this package needs no reflection.
type Adapter[T any] interface {
	Columns() ent.HierarchyColumns
	Row(T) ent.HierarchyRow
	Get(ctx context.Context, c *ent.Client, id int, lock bool) (T, error)
	List(ctx context.Context, c *ent.Client, where, order func(*sql.Selector), limit, offset int) ([]T, error)
	Create(ctx context.Context, c *ent.Client, v ent.HierarchyValues) (T, error)
	CreateMany(ctx context.Context, c *ent.Client, vs []ent.HierarchyValues) ([]int, error)
	Update(ctx context.Context, c *ent.Client, id int, ch ent.HierarchyChange) error
	Delete(ctx context.Context, c *ent.Client, id int) error
}

// Options are the settings every resource shares.
type Options struct {
	PageSizeMax   int   // page_size above this is clamped
	BodyLimit     int64 // largest request body in bytes
	Links         Links // how absolute URLs are made
	TreeNodeLimit int   // most nodes in one tree answer
}

// DefaultPageSize is the page size when the request gives none.
const DefaultPageSize = 10

// Registry registers resources on one router group (the API root) and
// remembers what it registered.
type Registry struct {
	router  gin.IRouter
	db      *db.DB
	opts    Options
	descs   []config.Resource
	routes  []Route
	loaders map[string]Loader
}

// Op names an operation of a resource.
type Op string

// The operations Register serves for every resource.
const (
	OpList        Op = "list"
	OpCreate      Op = "create"
	OpRead        Op = "read"
	OpUpdate      Op = "update"
	OpPatch       Op = "patch"
	OpDelete      Op = "delete"
	OpDescendants Op = "descendants"
	OpAncestors   Op = "ancestors"
	OpTree        Op = "tree"
)

// Route is one operation as registered: what the OpenAPI document is
// built from, so the document lists exactly what is served.
type Route struct {
	Method   string
	Path     string // below the API root, with {id} for the record id and a trailing slash
	Op       Op
	Resource config.Resource
}

// Loader returns the bulk loader of the resource named name, or nil.
func (reg *Registry) Loader(name string) Loader { return reg.loaders[name] }

// Routes returns every operation registered, in registration order.
func (reg *Registry) Routes() []Route { return reg.routes }

// NewRegistry returns a registry that serves resources on router, stored
// in d.
func NewRegistry(router gin.IRouter, d *db.DB, opts Options) *Registry {
	if opts.PageSizeMax < 1 {
		opts.PageSizeMax = 1000
	}
	if opts.TreeNodeLimit < 1 {
		opts.TreeNodeLimit = DefaultTreeNodeLimit
	}
	return &Registry{router: router, db: d, opts: opts}
}

// Resources returns the descriptions of the registered resources, in the
// order they were registered.
func (reg *Registry) Resources() []config.Resource { return reg.descs }

// Resource serves one hierarchical resource.
type Resource[T any] struct {
	desc  config.Resource
	a     Adapter[T]
	cols  ent.HierarchyColumns
	db    *db.DB
	opts  Options
	names names
	sql   statements
	hsql  hierarchyStatements
}

// Register serves the resource desc, stored through a, on reg's router:
//
//	GET    /{path}/       list         POST   /{path}/       create
//	GET    /{path}/{id}/  read         PUT    /{path}/{id}/  update
//	PATCH  /{path}/{id}/  partial update
//	DELETE /{path}/{id}/  delete
//	GET    /{path}/{id}/descendants/   GET /{path}/{id}/ancestors/
//	GET    /{path}/tree/?root=&depth=
//
// Every path is also served without its trailing slash.
func Register[T any](reg *Registry, desc config.Resource, a Adapter[T]) *Resource[T] {
	r := &Resource[T]{desc: desc, a: a, cols: a.Columns(), db: reg.db, opts: reg.opts}
	r.names = newNames(desc)
	r.sql = newStatements(r.cols, reg.db.MySQL())
	r.hsql = newHierarchyStatements(r.cols)
	collection, item, tree := "/"+desc.Path, "/"+desc.Path+"/:id", "/"+desc.Path+"/tree"
	for _, rt := range []struct {
		method, path string
		op           Op // "" for the answers to methods a path lacks
		h            gin.HandlerFunc
	}{
		{http.MethodGet, collection, OpList, r.handleList},
		{http.MethodPost, collection, OpCreate, r.handleCreate},
		{http.MethodGet, tree, OpTree, r.handleTree},
		// Without these, gin would take "tree" for an id of the item routes.
		{http.MethodPost, tree, "", onlyGET},
		{http.MethodPut, tree, "", onlyGET},
		{http.MethodPatch, tree, "", onlyGET},
		{http.MethodDelete, tree, "", onlyGET},
		{http.MethodGet, item, OpRead, r.handleRead},
		{http.MethodPut, item, OpUpdate, r.handleUpdate},
		{http.MethodPatch, item, OpPatch, r.handlePatch},
		{http.MethodDelete, item, OpDelete, r.handleDelete},
		{http.MethodGet, item + "/descendants", OpDescendants, r.handleDescendants},
		{http.MethodGet, item + "/ancestors", OpAncestors, r.handleAncestors},
	} {
		reg.router.Handle(rt.method, rt.path, rt.h)
		reg.router.Handle(rt.method, rt.path+"/", rt.h)
		if rt.op != "" {
			path := strings.Replace(rt.path, ":id", "{id}", 1) + "/"
			reg.routes = append(reg.routes, Route{Method: rt.method, Path: path, Op: rt.op, Resource: desc})
		}
	}
	reg.descs = append(reg.descs, desc)
	if reg.loaders == nil {
		reg.loaders = map[string]Loader{}
	}
	reg.loaders[desc.Name] = r
	return r
}

// names are the API names and messages of one resource, worked out once.
type names struct {
	code, name, parent         string // field names
	codeContains, nameContains string // filter parameters
	parentIsNull               string
	keyID, keyCode, keyName    string // JSON keys with their punctuation
	keyParent                  string
	codeExists                 string // message for a duplicate code
	selfParent                 string
}

func newNames(d config.Resource) names {
	f := d.Fields
	return names{
		code: f.Code, name: f.Name, parent: f.Parent,
		codeContains: f.Code + "_icontains", nameContains: f.Name + "_icontains",
		parentIsNull: f.Parent + "_isnull",
		keyID:        `{"id":`,
		keyCode:      `,"` + f.Code + `":`,
		keyName:      `,"` + f.Name + `":`,
		keyParent:    `,"` + f.Parent + `":`,
		codeExists:   d.Name + " with this " + f.Code + " already exists.",
		selfParent:   "This " + d.Name + " cannot be its own parent.",
	}
}
