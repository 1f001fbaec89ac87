// Package openapi builds the OpenAPI 3 document of the service from the
// routes the resource layer registered, so that a resource added by config
// is documented with no further work, and the document lists exactly the
// operations that are served.
package openapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"personnel/config"
	"personnel/resource"
)

// Input is what the document describes.
type Input struct {
	Version       string           // of the service
	APIRoot       string           // where the resources are served
	Routes        []resource.Route // as registered
	PageSizeMax   int
	TreeNodeLimit int
	BodyLimit     int64
	Metrics       bool // whether /metrics is served
}

// Paths of the service endpoints, documented beside the resources.
const (
	LoginPath      = "/jwt-api-token-auth/"
	RefreshPath    = "/jwt-api-token-refresh/"
	VerifyPath     = "/jwt-api-token-verify/"
	TokenLoginPath = "/api-token-auth/"
	HealthPath     = "/healthz"
	ReadyPath      = "/readyz"
	MetricsPath    = "/metrics"
	DocPath        = "/openapi.json" // below the API root
)

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// Build returns the document as JSON.
func Build(in Input) ([]byte, error) {
	b := builder{in: in, paths: obj{}, schemas: commonSchemas()}
	b.serviceEndpoints()
	for _, rt := range in.Routes {
		if err := b.route(rt); err != nil {
			return nil, err
		}
	}
	doc := obj{
		"openapi": "3.0.3",
		"info": obj{
			"title":   "Personnel API",
			"version": in.Version,
			"description": "Hierarchical reference resources (departments, areas, and any added by config). " +
				"Send `Authorization: JWT <token>` (or `Bearer <token>`) with a token from " + LoginPath + ". " +
				"Every error is `{code, msg, errors?}` with `code` equal to the HTTP status.",
		},
		"paths": b.paths,
		"components": obj{
			"schemas": b.schemas,
			"securitySchemes": obj{
				"jwt": obj{
					"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "A token from " + LoginPath + "; the scheme word may be JWT or Bearer, in any letter case.",
				},
				"token": obj{
					"type": "apiKey", "in": "header", "name": "Authorization",
					"description": "`Token <key>` with a key from " + TokenLoginPath + " (Django REST Framework's token authentication); the scheme word in any letter case.",
				},
				"basic": obj{"type": "http", "scheme": "basic", "description": "HTTP Basic with a username and password."},
			},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

type builder struct {
	in      Input
	paths   obj
	schemas obj
}

func (b *builder) op(path, method string, op obj) {
	item, _ := b.paths[path].(obj)
	if item == nil {
		item = obj{}
		b.paths[path] = item
	}
	item[strings.ToLower(method)] = op
}

// jsonContent is a JSON body of the given schema.
func jsonContent(schema any) obj { return obj{"application/json": obj{"schema": schema}} }

func response(desc string, schema any) obj {
	r := obj{"description": desc}
	if schema != nil {
		r["content"] = jsonContent(schema)
	}
	return r
}

// errors is the default response of every operation: the contract's error
// shape, whatever the status.
func errorsResponse(statuses string) obj {
	return response("An error: "+statuses+". The body's code is the HTTP status.", ref("Error"))
}

func commonSchemas() obj {
	return obj{
		"Error": obj{
			"type": "object", "required": []string{"code", "msg"},
			"description": "For Django REST Framework clients, each invalid field's messages are also at the top level, " +
				"and any other error carries `detail`.",
			"additionalProperties": obj{"type": "array", "items": obj{"type": "string"}, "description": "An invalid field's messages, as DRF reports them."},
			"properties": obj{
				"code": obj{"type": "integer", "description": "The HTTP status."},
				"msg":  obj{"type": "string", "description": "What went wrong, for a person; for invalid fields every `field: message`."},
				"errors": obj{"type": "object", "description": "Messages of each invalid field or parameter.",
					"additionalProperties": obj{"type": "array", "items": obj{"type": "string"}}},
				"detail":           obj{"type": "string", "description": "The msg again, on every error that is not about fields (DRF's key)."},
				"non_field_errors": obj{"type": "array", "items": obj{"type": "string"}, "description": "A failed login, refresh or verify (DRF's key)."},
			},
		},
		"Credentials": obj{
			"type": "object", "required": []string{"username", "password"},
			"properties": obj{"username": obj{"type": "string", "minLength": 1}, "password": obj{"type": "string", "minLength": 1}},
		},
		"TokenRequest": obj{
			"type": "object", "required": []string{"token"},
			"properties": obj{"token": obj{"type": "string", "minLength": 1}},
		},
		"Token": obj{
			"type": "object", "required": []string{"token"}, "additionalProperties": false,
			"properties": obj{"token": obj{"type": "string", "description": "A JWT, or an API key from " + TokenLoginPath + "."}},
		},
		"Health": obj{
			"type": "object", "required": []string{"status"},
			"properties": obj{"status": obj{"type": "string"}},
		},
	}
}

func (b *builder) serviceEndpoints() {
	tokenOp := func(id, summary, body, errs string) obj {
		content := jsonContent(ref(body))
		if body == "Credentials" { // DRF's login views take forms too
			content["application/x-www-form-urlencoded"] = obj{"schema": ref(body)}
			content["multipart/form-data"] = obj{"schema": ref(body)}
		}
		return obj{
			"operationId": id, "summary": summary, "tags": []string{"authentication"}, "security": []obj{},
			"requestBody": obj{"required": true, "content": content},
			"responses": obj{
				"200":     response("A token.", ref("Token")),
				"default": errorsResponse(errs),
			},
		}
	}
	loginErrs := "400 wrong credentials (non_field_errors) or malformed body, 413, 415, 429 too many failed logins (with Retry-After), 503 too many passwords being checked at once (with Retry-After)"
	b.op(LoginPath, "POST", tokenOp("login", "Trade a username and password for a JWT.", "Credentials", loginErrs))
	b.op(TokenLoginPath, "POST", tokenOp("tokenLogin", "Trade a username and password for the user's API key (40 hex digits), the same at each login while it is valid.", "Credentials", loginErrs))
	b.op(RefreshPath, "POST", tokenOp("refreshToken", "Trade a token (even an expired one, within the refresh window from the original login) for a newer one.", "TokenRequest",
		"400 a token that cannot be refreshed (non_field_errors) or a malformed body, 413, 415"))
	b.op(VerifyPath, "POST", tokenOp("verifyToken", "Check a JWT: the same token back when it is valid.", "TokenRequest",
		"400 an invalid or expired token (non_field_errors) or a malformed body, 413, 415"))
	b.op(HealthPath, "GET", obj{
		"operationId": "health", "summary": "The process is up.", "tags": []string{"service"}, "security": []obj{},
		"responses": obj{"200": response("Up.", ref("Health"))},
	})
	b.op(ReadyPath, "GET", obj{
		"operationId": "ready", "summary": "The database answers.", "tags": []string{"service"}, "security": []obj{},
		"responses": obj{"200": response("Ready.", ref("Health")), "default": errorsResponse("503 the database does not answer")},
	})
	b.op(b.in.APIRoot+DocPath, "GET", obj{
		"operationId": "openapi", "summary": "This document.", "tags": []string{"service"}, "security": []obj{},
		"responses": obj{"200": response("The OpenAPI document.", obj{"type": "object"})},
	})
	if b.in.Metrics {
		b.op(MetricsPath, "GET", obj{
			"operationId": "metrics", "summary": "Prometheus metrics.", "tags": []string{"service"}, "security": []obj{},
			"responses": obj{"200": obj{"description": "Metrics in the Prometheus text format.",
				"content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}},
		})
	}
}

// resourceSchemas adds the schemas of resource r, once.
func (b *builder) resourceSchemas(r config.Resource) {
	name := r.TypeName()
	if _, done := b.schemas[name]; done {
		return
	}
	f := r.Fields
	record := func() obj {
		return obj{
			"id":     obj{"type": "integer", "minimum": 1},
			f.Code:   obj{"type": "string", "minLength": 1, "maxLength": r.Limits.Code},
			f.Name:   obj{"type": "string", "minLength": 1, "maxLength": r.Limits.Name},
			f.Parent: obj{"type": "integer", "minimum": 1, "nullable": true, "description": "The id of the parent " + r.Name + ", or null for a root."},
		}
	}
	all := []string{"id", f.Code, f.Name, f.Parent}
	b.schemas[name] = obj{"type": "object", "required": all, "additionalProperties": false, "properties": record()}
	node := record()
	node["children"] = obj{"type": "array", "items": ref(name + "Node")}
	b.schemas[name+"Node"] = obj{"type": "object", "required": append(all, "children"), "additionalProperties": false, "properties": node}
	parent := obj{
		"nullable": true,
		"description": "The id of the parent, as an integer or a string of digits; null clears it. " +
			"It must exist, and must be neither the record itself nor below it.",
		"anyOf": []obj{{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+$"}},
	}
	text := func(limit int) obj {
		return obj{"type": "string", "description": fmt.Sprintf("Trimmed of surrounding white space, then 1 to %d characters.", limit)}
	}
	codeDoc := text(r.Limits.Code)
	codeDoc["description"] = codeDoc["description"].(string) + " Unique within " + r.Path + " regardless of letter case."
	write := obj{f.Code: codeDoc, f.Name: text(r.Limits.Name), f.Parent: parent}
	b.schemas[name+"Write"] = obj{"type": "object", "required": []string{f.Code, f.Name}, "properties": write,
		"description": "Fields the resource does not have (id among them) are ignored. PUT without " + f.Parent + " keeps the parent."}
	b.schemas[name+"Patch"] = obj{"type": "object", "properties": write,
		"description": "Only the fields given change; {} changes nothing."}
	link := obj{"type": "string", "format": "uri", "nullable": true}
	b.schemas[name+"Page"] = obj{
		"type": "object", "required": []string{"count", "next", "previous", "msg", "code", "data"}, "additionalProperties": false,
		"properties": obj{
			"count": obj{"type": "integer", "minimum": 0, "description": "Records matching the filters."},
			"next":  link, "previous": link,
			"msg":  obj{"type": "string", "enum": []string{""}},
			"code": obj{"type": "integer", "enum": []int{0}},
			"data": obj{"type": "array", "items": ref(name)},
		},
	}
	b.schemas[name+"Tree"] = obj{
		"type": "object", "required": []string{"code", "msg", "data"}, "additionalProperties": false,
		"properties": obj{
			"msg":  obj{"type": "string", "enum": []string{""}},
			"code": obj{"type": "integer", "enum": []int{0}},
			"data": obj{"type": "array", "items": ref(name + "Node")},
		},
	}
}

// listParameters are the query parameters of a list (and of descendants).
func (b *builder) listParameters(r config.Resource) []obj {
	f := r.Fields
	// Filters and ordering may be given empty, which means "not given".
	q := func(name, desc string, schema obj) obj {
		return obj{"name": name, "in": "query", "required": false, "description": desc, "schema": schema, "allowEmptyValue": true}
	}
	paging := func(name, desc string, schema obj) obj {
		return obj{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
	}
	str := obj{"type": "string"}
	return []obj{
		paging("page", "Page number from 1, or `last`. A page that is not one, or past the last, is a 404.",
			obj{"type": "string", "pattern": "^([1-9][0-9]*|last)$"}),
		paging("page_size", fmt.Sprintf("Records per page (default %d); above %d is clamped.", resource.DefaultPageSize, b.in.PageSizeMax),
			obj{"type": "integer", "minimum": 1}),
		q(f.Code, "Exact, case-sensitive code.", str),
		q(f.Name, "Exact, case-sensitive name.", str),
		q(f.Code+"_icontains", "Codes containing this, ignoring letter case (all of Unicode); % and _ are literal.", str),
		q(f.Name+"_icontains", "Names containing this, ignoring letter case (all of Unicode); % and _ are literal.", str),
		q(f.Parent, "Records whose parent is this id.", obj{"type": "integer"}),
		q(f.Parent+"_isnull", "true: only roots; false: only records with a parent.", obj{"type": "boolean"}),
		q("ordering", fmt.Sprintf("Comma-separated fields from id, %s, %s; a leading - sorts descending. "+
			"Codes and names sort ignoring letter case, then by exact value; id breaks ties in the direction of the last field.", f.Code, f.Name), str),
	}
}

func idParameter(r config.Resource) obj {
	return obj{"name": "id", "in": "path", "required": true, "description": "The id of a " + r.Name + "; anything else is a 404.",
		"schema": obj{"type": "integer", "minimum": 1}}
}

func ifMatch() obj {
	return obj{"name": "If-Match", "in": "header", "required": false,
		"description": "Apply only if the record's ETag is one of these (`*`: any existing record); else 412.",
		"schema":      obj{"type": "string"}}
}

// etagHeader is a new headers object each time: callers add to it.
func etagHeader() obj {
	return obj{"ETag": obj{"description": "The record's entity tag, for If-Match.", "schema": obj{"type": "string"}}}
}

func (b *builder) route(rt resource.Route) error {
	r := rt.Resource
	b.resourceSchemas(r)
	name, path := r.TypeName(), b.in.APIRoot+rt.Path
	withETag := func(resp obj) obj { resp["headers"] = etagHeader(); return resp }
	op := obj{"tags": []string{r.Path}, "security": []obj{{"jwt": []string{}}, {"token": []string{}}, {"basic": []string{}}}}
	writeErrors := "400 invalid fields (duplicate code, missing or circular parent), 401, 403 a viewer, 404, 412 stale If-Match, 413, 415"
	switch rt.Op {
	case resource.OpList:
		op["operationId"], op["summary"] = "list"+name, "List "+r.Path+"."
		op["parameters"] = b.listParameters(r)
		op["responses"] = obj{"200": response("A page.", ref(name+"Page")), "default": errorsResponse("400 malformed parameter, 401, 404 invalid page")}
	case resource.OpCreate:
		op["operationId"], op["summary"] = "create"+name, "Create a "+r.Name+"."
		op["requestBody"] = obj{"required": true, "content": jsonContent(ref(name + "Write"))}
		created := withETag(response("Created.", ref(name)))
		created["headers"].(obj)["Location"] = obj{"description": "The new record's URL.", "schema": obj{"type": "string", "format": "uri"}}
		op["responses"] = obj{"201": created, "default": errorsResponse(writeErrors)}
	case resource.OpRead:
		op["operationId"], op["summary"] = "read"+name, "Read a "+r.Name+"."
		op["parameters"] = []obj{idParameter(r)}
		op["responses"] = obj{"200": withETag(response("The record.", ref(name))), "default": errorsResponse("401, 404")}
	case resource.OpUpdate, resource.OpPatch:
		verb, body := "Replace the code and name of", name+"Write"
		if rt.Op == resource.OpPatch {
			verb, body = "Change some fields of", name+"Patch"
		}
		op["operationId"], op["summary"] = string(rt.Op)+name, verb+" a "+r.Name+"."
		op["parameters"] = []obj{idParameter(r), ifMatch()}
		op["requestBody"] = obj{"required": true, "content": jsonContent(ref(body))}
		op["responses"] = obj{"200": withETag(response("The record as stored.", ref(name))), "default": errorsResponse(writeErrors)}
	case resource.OpDelete:
		op["operationId"], op["summary"] = "delete"+name, "Delete a "+r.Name+" that no record names as parent."
		op["parameters"] = []obj{idParameter(r), ifMatch()}
		op["responses"] = obj{"204": obj{"description": "Deleted."}, "default": errorsResponse("401, 403, 404, 409 still a parent, 412")}
	case resource.OpDescendants:
		op["operationId"], op["summary"] = name+"Descendants", "Every "+r.Name+" below one, at any depth; the list parameters apply."
		op["parameters"] = append([]obj{idParameter(r)}, b.listParameters(r)...)
		op["responses"] = obj{"200": response("A page.", ref(name+"Page")), "default": errorsResponse("400, 401, 404")}
	case resource.OpAncestors:
		op["operationId"], op["summary"] = name+"Ancestors", "The "+r.Path+" above one, from the root down to its parent; not paged."
		op["parameters"] = []obj{idParameter(r)}
		op["responses"] = obj{"200": response("All of them, in one page.", ref(name+"Page")), "default": errorsResponse("401, 404")}
	case resource.OpTree:
		op["operationId"], op["summary"] = name+"Tree", "Records nested with their children (siblings by id)."
		op["parameters"] = []obj{
			{"name": "root", "in": "query", "required": false, "allowEmptyValue": true, "description": "The id of the subtree's root; none: the whole forest.", "schema": obj{"type": "integer", "minimum": 1}},
			{"name": "depth", "in": "query", "required": false, "allowEmptyValue": true, "description": "Levels below the roots; 0: the roots alone.", "schema": obj{"type": "integer", "minimum": 0}},
		}
		op["responses"] = obj{"200": response("The tree.", ref(name+"Tree")),
			"default": errorsResponse(fmt.Sprintf("400 more than %d nodes (ask for a root or a depth) or a malformed parameter, 401, 404 no such root", b.in.TreeNodeLimit))}
	default:
		return fmt.Errorf("openapi: %s %s: operation %q has no documentation", rt.Method, path, rt.Op)
	}
	b.op(path, rt.Method, op)
	return nil
}
