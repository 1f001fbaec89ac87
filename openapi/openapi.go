// Package openapi builds the OpenAPI 3 document of the service from the
// operations the resource layer registered (each carries its own route
// and documentation), so that a resource added by config is documented
// with no further work, and the document lists exactly the operations
// that are served.
package openapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"personnel/resource"
)

// Input is what the document describes.
type Input struct {
	Version    string               // of the service
	APIRoot    string               // where the resources are served
	PublicURL  string               // the service's base URL, when configured: the document's server
	Resources  []*resource.Resource // their body schemas
	Operations []resource.Operation // as registered
	Schemas    map[string]any       // of operations that belong to no resource
	Metrics    bool                 // whether /metrics is served
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
	WhoAmIPath     = "/whoami/"      // below the API root
)

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// Build returns the document as JSON.
func Build(in Input) ([]byte, error) {
	b := builder{in: in, paths: obj{}, schemas: commonSchemas()}
	b.serviceEndpoints()
	for _, r := range in.Resources {
		for name, s := range r.Schemas() {
			b.schemas[name] = s
		}
	}
	for name, s := range in.Schemas {
		b.schemas[name] = s
	}
	for _, op := range in.Operations {
		b.operation(op)
	}
	doc := obj{
		"openapi": "3.0.3",
		"info": obj{
			"title":   "Personnel API",
			"version": in.Version,
			"description": "Hierarchical reference resources (departments, areas, and any added by config). " +
				"Authenticate with `Authorization: JWT <token>` (or `Bearer <token>`) with a token from " + LoginPath +
				", `Authorization: Token <key>` with a key from " + TokenLoginPath + ", or HTTP Basic. " +
				"Every error is `{code, msg, ...}` with `code` equal to the HTTP status.",
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
	if in.PublicURL != "" {
		doc["servers"] = []obj{{"url": in.PublicURL}}
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

// errorsResponse is the default response of every operation: the error
// shape, whatever the status.
func errorsResponse(statuses string) obj {
	return response("An error: "+statuses+". The body's code is the HTTP status.", ref("Error"))
}

// fieldErrors are the messages of each invalid field, by key.
var fieldErrors = obj{"type": "object", "additionalProperties": obj{"type": "array", "items": obj{"type": "string"}}}

func commonSchemas() obj {
	return obj{
		"ImportResult": obj{
			"type": "object", "required": []string{"created", "updated", "unchanged", "deleted", "rows"},
			"properties": obj{
				"created":   obj{"type": "integer", "minimum": 0},
				"updated":   obj{"type": "integer", "minimum": 0},
				"unchanged": obj{"type": "integer", "minimum": 0},
				"deleted":   obj{"type": "integer", "minimum": 0},
				"rows": obj{"type": "array", "description": "A dry run's invalid rows; empty when the file is valid.",
					"items": obj{"type": "object", "required": []string{"row", "errors"}, "properties": obj{
						"row": obj{"type": "integer", "minimum": 1}, "errors": fieldErrors}}},
			},
		},
		"Error": obj{
			"type": "object", "required": []string{"code", "msg"},
			"description": "For Django REST Framework clients, each invalid field's messages are also at the top level, " +
				"and any other error carries `detail`.",
			"additionalProperties": obj{"type": "array", "items": obj{"type": "string"}, "description": "An invalid field's messages, as DRF reports them."},
			"properties": obj{
				"code": obj{"type": "integer", "description": "The HTTP status."},
				"msg":  obj{"type": "string", "description": "What went wrong, for a person; for invalid fields every `field: message`."},
				"errors": obj{"description": "Messages of each invalid field or parameter; for a JSON array POSTed to a collection, a list with one such object per element ({} for a valid one).",
					"anyOf": []obj{fieldErrors, {"type": "array", "items": fieldErrors}}},
				"rows": obj{"type": "array", "description": "An import's invalid rows, each with its number (the header is row 1) and its fields' messages.",
					"items": obj{"type": "object", "required": []string{"row", "errors"}, "properties": obj{
						"row": obj{"type": "integer", "minimum": 1}, "errors": fieldErrors}}},
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
			"type": "object", "required": []string{"token"},
			"properties": obj{"token": obj{"type": "string", "description": "A JWT, or an API key from " + TokenLoginPath + "."}},
		},
		"Metadata": metadataSchema(),
		"Health": obj{
			"type": "object", "required": []string{"status"},
			"properties": obj{"status": obj{"type": "string"}},
		},
		"WhoAmI": obj{
			"type": "object", "required": []string{"username", "role"},
			"properties": obj{
				"username": obj{"type": "string"},
				"role":     obj{"type": "string", "enum": []string{"editor", "viewer"}, "description": "An editor may write; a viewer's writes get 403."},
			},
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
	b.op(b.in.APIRoot+"/", "GET", obj{
		"operationId": "apiRoot", "summary": "A link to each resource, and to this document.", "tags": []string{"service"}, "security": []obj{},
		"responses": obj{"200": response("The links, by resource path.", obj{"type": "object",
			"additionalProperties": obj{"type": "string", "format": "uri"}})},
	})
	b.op(b.in.APIRoot+WhoAmIPath, "GET", obj{
		"operationId": "whoami", "summary": "The user the credentials belong to, and their role.", "tags": []string{"authentication"},
		"security":  []obj{{"jwt": []string{}}, {"token": []string{}}, {"basic": []string{}}},
		"responses": obj{"200": response("The user.", ref("WhoAmI")), "401": response("Unauthorized.", ref("Error")), "default": errorsResponse("401")},
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

// statusRE finds the statuses an operation's error text names.
var statusRE = regexp.MustCompile(`\b[45][0-9][0-9]\b`)

// operation adds op to the document.
func (b *builder) operation(op resource.Operation) {
	path := b.in.APIRoot + op.Path
	success := obj{"description": http.StatusText(op.Status) + "."}
	if op.Response != "" {
		success["content"] = fileContent(op.Produces, ref(op.Response))
	}
	if len(op.Headers) > 0 {
		headers := obj{}
		for _, h := range op.Headers {
			switch h {
			case "ETag":
				headers[h] = obj{"description": "The record's entity tag, for If-Match.", "schema": obj{"type": "string"}}
			case "Location":
				headers[h] = obj{"description": "The new record's URL.", "schema": obj{"type": "string", "format": "uri"}}
			case resource.ChangesCursorHeader:
				headers[h] = obj{"description": "The cursor of the resource's change feed from before the page was read: follow the feed from it to miss nothing.", "schema": obj{"type": "string"}}
			case "Content-Disposition":
				headers[h] = obj{"description": "attachment, with the file's name: the resource's path and the day (departments-20261126.csv).", "schema": obj{"type": "string"}}
			case "Allow":
				headers[h] = obj{"description": "The path's methods, as Django REST Framework lists them.", "schema": obj{"type": "string"}}
			}
		}
		success["headers"] = headers
	}
	responses := obj{strconv.Itoa(op.Status): success}
	for _, status := range statusRE.FindAllString(op.Errors, -1) {
		n, _ := strconv.Atoi(status)
		responses[status] = response(http.StatusText(n)+".", ref("Error"))
	}
	responses["default"] = errorsResponse(op.Errors)
	var params []obj
	for _, p := range op.Params {
		param := obj{"name": p.Name, "in": p.In, "required": p.Required, "description": p.Doc, "schema": p.Schema}
		if p.In == "query" {
			param["allowEmptyValue"] = true // an empty value means "not given"
		}
		params = append(params, param)
	}
	o := obj{
		"operationId": op.ID, "summary": op.Summary, "tags": []string{op.Tag},
		"security":  []obj{{"jwt": []string{}}, {"token": []string{}}, {"basic": []string{}}},
		"responses": responses,
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if op.Body != "" {
		o["requestBody"] = obj{"required": true, "content": fileContent(op.Consumes, ref(op.Body))}
	}
	b.op(path, op.Method, o)
}

// fileContent is a body of one of types (JSON of schema, a CSV text, an
// XLSX workbook, or a multipart form with the file as "file"), or JSON of
// schema when types is empty.
func fileContent(types []string, schema any) obj {
	if len(types) == 0 {
		return jsonContent(schema)
	}
	content := obj{}
	for _, t := range types {
		switch t {
		case "application/json":
			content[t] = obj{"schema": schema}
		case "text/csv":
			content[t] = obj{"schema": obj{"type": "string", "description": "UTF-8 (a leading BOM is accepted), a header row, then a row a record."}}
		case "multipart/form-data":
			content[t] = obj{"schema": obj{"type": "object", "required": []string{"file"},
				"properties": obj{"file": obj{"type": "string", "format": "binary"}}}}
		default:
			content[t] = obj{} // a binary file (an XLSX workbook)
		}
	}
	return content
}

// metadataSchema is the body of an OPTIONS answer: Django REST Framework's
// SimpleMetadata.
func metadataSchema() obj {
	strs := obj{"type": "array", "items": obj{"type": "string"}}
	field := obj{
		"type": "object", "required": []string{"type", "required", "read_only", "label"},
		"properties": obj{
			"type":       obj{"type": "string", "description": "string, integer, boolean, date, choice, or field (a parent's id)."},
			"required":   obj{"type": "boolean"},
			"read_only":  obj{"type": "boolean"},
			"label":      obj{"type": "string"},
			"help_text":  obj{"type": "string"},
			"max_length": obj{"type": "integer"},
			"min_value":  obj{"type": "integer", "format": "int64"},
			"max_value":  obj{"type": "integer", "format": "int64"},
			"choices": obj{"type": "array", "items": obj{
				"type": "object", "required": []string{"value", "display_name"},
				"properties": obj{"value": obj{"type": "string"}, "display_name": obj{"type": "string"}},
			}},
		},
	}
	body := obj{"type": "object", "additionalProperties": field, "description": "Each field of the body, by key, in order."}
	return obj{
		"type": "object", "required": []string{"name", "description", "renders", "parses"},
		"description": "Django REST Framework's metadata of the path's view.",
		"properties": obj{
			"name":        obj{"type": "string"},
			"description": obj{"type": "string"},
			"renders":     strs,
			"parses":      strs,
			"actions": obj{
				"type": "object", "description": "The bodies the caller may send (an editor only): POST on a collection, PUT on an existing record.",
				"properties": obj{"POST": body, "PUT": body},
			},
		},
	}
}
