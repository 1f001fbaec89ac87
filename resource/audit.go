package resource

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
)

// The audit trail, read (db/audit.go writes it): every resource's at
//
//	GET /personnel/api/audit/?resource=department&actor=alice&at_gte=2026-11-01
//
// newest first, in the list envelope, and one record's history at
//
//	GET /personnel/api/departments/5/history/
//
// Editors read them, viewers only when PERSONNEL_AUDIT_VIEWERS is true;
// nobody writes them (they answer 405 to every other method).

// auditFilters are the audit list's filter parameters.
var auditFilters = []string{"resource", "record_id", "actor", "action", "request_id", "at_gte", "at_lte"}

// auditActions are the actions an entry may record.
var auditActions = []string{db.ActionCreate, db.ActionUpdate, db.ActionDelete}

// canReadAudit refuses a caller who may not read the audit trail.
func (opts Options) canReadAudit(c *gin.Context) error {
	if opts.CanReadAudit == nil || opts.CanReadAudit(c) {
		return nil
	}
	return apierror.New(apierror.Forbidden, "Only editors may read the audit trail (PERSONNEL_AUDIT_VIEWERS lets viewers too).")
}

// auditPage parses page and page_size as a list does.
func (opts Options) auditPage(values url.Values, bad func(param, msg string)) (page, size int) {
	page, size = 1, DefaultPageSize
	if v, ok := last(values, "page_size"); ok {
		n, valid := pythonInt(v)
		switch {
		case valid && n > 0:
			size = min(n, opts.PageSizeMax)
		case opts.StrictQuery:
			bad("page_size", "Enter a positive integer.")
		}
	}
	if v, ok := last(values, "page"); ok {
		if n, valid := positiveInt(v); valid {
			page = n
		} else {
			page = -1
		}
	}
	return page, size
}

// writeAudit answers a page of the entries f selects.
func (opts Options) writeAudit(c *gin.Context, d *db.DB, f db.AuditFilter, page, size int) error {
	if page < 1 || page > (1<<31)/size {
		return errInvalidPage()
	}
	entries, total, err := d.Audit(c.Request.Context(), f, size, (page-1)*size)
	if err != nil {
		return (&Resource{}).storeError(err)
	}
	if len(entries) == 0 && page > 1 {
		return errInvalidPage()
	}
	var next, previous string
	if page*size < total {
		next = opts.Links.Page(c.Request, page+1)
	}
	if page > 1 {
		previous = opts.Links.Page(c.Request, page-1)
	}
	b := append(make([]byte, 0, 256+256*len(entries)), `{"count":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"next":`...)
	b = appendURL(b, next)
	b = append(b, `,"previous":`...)
	b = appendURL(b, previous)
	b = append(b, `,"msg":"","code":0,"data":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAuditEntry(b, e)
	}
	c.Data(http.StatusOK, "application/json", append(b, "]}"...))
	return nil
}

// appendAuditEntry renders an entry.
func appendAuditEntry(b []byte, e db.AuditEntry) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, `,"at":`...)
	b = apierror.AppendString(b, e.At.Format("2006-01-02T15:04:05.000000Z07:00"))
	b = append(b, `,"actor":`...)
	switch {
	case e.Actor.Command != "":
		b = append(b, `{"cli":`...)
		b = apierror.AppendString(b, e.Actor.Command)
		b = append(b, '}')
	case e.Actor.Username != "":
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(e.Actor.UserID), 10)
		b = append(b, `,"username":`...)
		b = apierror.AppendString(b, e.Actor.Username)
		b = append(b, '}')
	default:
		b = append(b, "null"...)
	}
	b = append(b, `,"request_id":`...)
	if e.RequestID == "" {
		b = append(b, "null"...)
	} else {
		b = apierror.AppendString(b, e.RequestID)
	}
	b = append(b, `,"resource":`...)
	b = apierror.AppendString(b, e.Resource)
	b = append(b, `,"record_id":`...)
	b = strconv.AppendInt(b, e.RecordID, 10)
	b = append(b, `,"action":`...)
	b = apierror.AppendString(b, e.Action)
	b = append(b, `,"changes":`...)
	b = append(b, e.Changes...)
	return append(b, '}')
}

// handleHistory answers the entries of one record, which need not exist
// any more (its deletion is part of its history); a record that never had
// one is a 404.
func (r *Resource) handleHistory(c *gin.Context) error {
	if err := r.opts.canReadAudit(c); err != nil {
		return err
	}
	id, ok := parseID(c.Param("id"))
	if !ok {
		return apierror.NotFoundError()
	}
	values := c.Request.URL.Query()
	var errs []apierror.FieldError
	page, size := r.opts.auditPage(values, func(param, msg string) { errs = append(errs, apierror.FieldError{Field: param, Msg: msg}) })
	if err := r.CheckParams(values, "page", "page_size"); err != nil {
		errs = append(errs, apierror.As(err).Fields...)
	}
	if len(errs) > 0 {
		return apierror.Fields(errs...)
	}
	f := db.AuditFilter{Resource: r.desc.Name, RecordID: int64(id)}
	if page == 1 {
		if _, total, err := r.db.Audit(c.Request.Context(), f, 1, 0); err != nil {
			return r.storeError(err)
		} else if total == 0 {
			if _, err := r.Get(c.Request.Context(), id); err != nil {
				return err
			}
		}
	}
	return r.opts.writeAudit(c, r.db, f, page, size)
}

// historyOperation is the route of a record's history.
func (r *Resource) historyOperation(lower, item string, id Param) Operation {
	return Operation{ID: lower + "History", Method: http.MethodGet, Path: item + "history/",
		Summary: "Who changed the " + r.desc.Name + ", when, and what: its audit entries, newest first (editors; viewers when PERSONNEL_AUDIT_VIEWERS is true).",
		Params:  []Param{id, pageParam(), pageSizeParam(r.opts)}, Status: http.StatusOK, Response: "AuditPage",
		Errors: "400, 401, 403 a viewer, 404 a record that never existed", handle: r.handleHistory}
}

func pageParam() Param {
	return Param{Name: "page", In: "query", Doc: "Page number from 1. A page that is not one, or past the last, is a 404.",
		Schema: obj{"type": "string", "pattern": "^[1-9][0-9]*$"}}
}

func pageSizeParam(opts Options) Param {
	return Param{Name: "page_size", In: "query", Doc: fmt.Sprintf("Entries per page (default %d); above %d is clamped.", DefaultPageSize, opts.PageSizeMax),
		Schema: obj{"type": "string"}}
}

// RegisterAudit serves the audit list of every resource reg serves.
func RegisterAudit(reg *Registry) {
	opts, d := reg.opts, reg.db
	names := []string{}
	for _, r := range reg.resources {
		names = append(names, r.desc.Name)
	}
	handle := func(c *gin.Context) error {
		if err := opts.canReadAudit(c); err != nil {
			return err
		}
		values := c.Request.URL.Query()
		var errs []apierror.FieldError
		bad := func(param, msg string) { errs = append(errs, apierror.FieldError{Field: param, Msg: msg}) }
		page, size := opts.auditPage(values, bad)
		var f db.AuditFilter
		get := func(name string) string { v, _ := last(values, name); return v }
		if v := get("resource"); v != "" {
			if !slices.Contains(names, v) {
				bad("resource", msgInvalidChoice(v))
			}
			f.Resource = v
		}
		if v := get("record_id"); v != "" {
			n, ok := positiveInt(v)
			if !ok {
				bad("record_id", "Enter a whole number.")
			}
			f.RecordID = int64(n)
		}
		f.Actor, f.RequestID = get("actor"), get("request_id")
		if v := get("action"); v != "" {
			if !slices.Contains(auditActions, v) {
				bad("action", msgInvalidChoice(v))
			}
			f.Action = v
		}
		for _, p := range []struct {
			name string
			at   *time.Time
			end  bool
		}{{"at_gte", &f.AtGTE, false}, {"at_lte", &f.AtLTE, true}} {
			if v := get(p.name); v != "" {
				t, ok := parseInstant(v, p.end)
				if !ok {
					bad(p.name, "Enter a valid date/time (RFC 3339, e.g. 2026-11-26T09:30:00Z, or a date YYYY-MM-DD).")
				}
				*p.at = t
			}
		}
		for _, name := range auditFilters {
			if v := get(name); strings.IndexByte(v, 0) >= 0 {
				bad(name, msgNulChar)
			}
		}
		if opts.StrictQuery {
			known := append([]string{"page", "page_size"}, auditFilters...)
			for name := range values {
				if !slices.Contains(known, name) {
					bad(name, "Unknown parameter.")
				}
			}
		}
		if len(errs) > 0 {
			return apierror.Fields(errs...)
		}
		return opts.writeAudit(c, d, f, page, size)
	}
	params := []Param{pageParam(), pageSizeParam(opts)}
	for _, name := range auditFilters {
		doc := map[string]string{
			"resource": "Entries of this resource (its name: " + strings.Join(names, ", ") + ").", "record_id": "Entries of this record id.",
			"actor": "Entries made by this user (username).", "action": "create, update or delete.", "request_id": "Entries of this request (X-Request-ID).",
			"at_gte": "Entries at or after this time (RFC 3339, or a date).", "at_lte": "Entries at or before this time (RFC 3339, or a date: its end).",
		}[name]
		params = append(params, Param{Name: name, In: "query", Doc: doc, Schema: obj{"type": "string"}})
	}
	op := Operation{ID: "listAudit", Method: http.MethodGet, Path: "/audit/", Tag: "audit",
		Summary: "The audit trail: who changed which record, when, and what, newest first (editors; viewers when PERSONNEL_AUDIT_VIEWERS is true).",
		Params:  params, Status: http.StatusOK, Response: "AuditPage", Errors: "400 a malformed filter, 401, 403 a viewer, 404 invalid page",
		handle: handle}
	reg.router.Handle(http.MethodGet, "/audit", op.handler())
	reg.router.Handle(http.MethodGet, "/audit/", op.handler())
	reg.ops = append(reg.ops, op)
	reg.schemas["AuditEntry"] = auditEntrySchema()
	reg.schemas["AuditPage"] = obj{"type": "object", "required": []string{"count", "next", "previous", "msg", "code", "data"}, "properties": obj{
		"count": obj{"type": "integer", "minimum": 0}, "next": obj{"type": "string", "format": "uri", "nullable": true},
		"previous": obj{"type": "string", "format": "uri", "nullable": true},
		"msg":      obj{"type": "string", "enum": []string{""}}, "code": obj{"type": "integer", "enum": []int{0}},
		"data": obj{"type": "array", "items": obj{"$ref": "#/components/schemas/AuditEntry"}},
	}}
}

func auditEntrySchema() obj {
	return obj{"type": "object", "required": []string{"id", "at", "actor", "request_id", "resource", "record_id", "action", "changes"},
		"properties": obj{
			"id": obj{"type": "integer"},
			"at": obj{"type": "string", "format": "date-time", "description": "UTC, to the microsecond."},
			"actor": obj{"type": "object", "nullable": true, "description": "The user ({id, username}) or the command ({cli}) that made the change.",
				"properties": obj{"id": obj{"type": "integer"}, "username": obj{"type": "string"}, "cli": obj{"type": "string"}}},
			"request_id": obj{"type": "string", "nullable": true},
			"resource":   obj{"type": "string"},
			"record_id":  obj{"type": "integer"},
			"action":     obj{"type": "string", "enum": auditActions},
			"changes": obj{"type": "object", "description": "Each field that changed: [before, after] (a create's before and a delete's after are null).",
				"additionalProperties": obj{"type": "array", "minItems": 2, "maxItems": 2, "items": obj{"nullable": true}}},
		}}
}

// parseInstant parses an RFC 3339 time, or a date (its start, or with end
// its last microsecond).
func parseInstant(v string, end bool) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil || t.Year() < 1 {
		return time.Time{}, false
	}
	if end {
		t = t.Add(24*time.Hour - time.Microsecond)
	}
	return t, true
}
