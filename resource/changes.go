package resource

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
	"personnel/record"
)

// The change feed of a resource (db/feed.go keeps it):
//
//	GET /personnel/api/departments/changes/?cursor=<c>&limit=<n>&wait=<s>
//	{"cursor": "<next>", "more": false, "changes": [{"op": "upsert", "id": 5, "record": {...}}, {"op": "delete", "id": 7}]}
//
// A consumer that starts with no cursor, applies every change (upsert: put
// the record; delete: remove it) and always asks again with the cursor it
// was given ends with exactly the resource's records. Every list answer
// carries, in X-Changes-Cursor, the cursor of the feed as it was before
// the list was read: a consumer that reads every page and then follows
// the feed from it misses nothing.

// Bounds of a feed read.
const (
	defaultChangesLimit = 100
	maxChangesLimit     = 1000
	maxChangesWait      = 60 * time.Second
)

// ChangesCursorHeader carries, on a list answer, the feed's cursor from
// before the list was read.
const ChangesCursorHeader = "X-Changes-Cursor"

// cursorVersion starts every cursor, so that another kind can follow.
const cursorVersion = "c1"

// encodeCursor is the opaque cursor of seq in r's feed: the resource's
// name, seq and a check over both, so that a cursor of another resource,
// or one edited by hand, is refused.
func (r *Resource) encodeCursor(seq int64) string {
	body := cursorVersion + "." + r.desc.Name + "." + strconv.FormatInt(seq, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(body + "." + cursorCheck(body)))
}

func cursorCheck(body string) string {
	h := fnv.New32a()
	h.Write([]byte(body))
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

// decodeCursor returns the seq of a cursor of r's feed.
func (r *Resource) decodeCursor(c string) (int64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 4 || parts[0] != cursorVersion || parts[1] != r.desc.Name {
		return 0, false
	}
	if cursorCheck(strings.Join(parts[:3], ".")) != parts[3] {
		return 0, false
	}
	seq, err := strconv.ParseInt(parts[2], 10, 64)
	return seq, err == nil && seq >= 0
}

// changesQuery is a parsed feed request.
type changesQuery struct {
	after  int64
	cursor bool // after is a consumer's cursor (not the beginning)
	limit  int
	wait   time.Duration
}

func (r *Resource) parseChangesQuery(c *gin.Context) (changesQuery, error) {
	values := c.Request.URL.Query()
	q := changesQuery{limit: defaultChangesLimit}
	var errs []apierror.FieldError
	if v, ok := last(values, "cursor"); ok && v != "" {
		seq, valid := r.decodeCursor(v)
		if !valid {
			errs = append(errs, apierror.FieldError{Field: "cursor", Msg: "Not a cursor of this feed: use the cursor an answer of it gave, or none to start from the beginning."})
		}
		q.after, q.cursor = seq, true
	}
	if v, ok := last(values, "limit"); ok && v != "" {
		n, valid := positiveInt(v)
		if !valid {
			errs = append(errs, apierror.FieldError{Field: "limit", Msg: "Enter a positive integer."})
		}
		q.limit = min(n, maxChangesLimit)
	}
	if v, ok := last(values, "wait"); ok && v != "" && v != "0" {
		n, valid := positiveInt(v)
		if !valid {
			errs = append(errs, apierror.FieldError{Field: "wait", Msg: fmt.Sprintf("Enter a whole number of seconds, 0 to %d.", int(maxChangesWait.Seconds()))})
		}
		q.wait = min(time.Duration(min(n, 3600))*time.Second, maxChangesWait)
	}
	if err := r.CheckParams(values, "cursor", "limit", "wait"); err != nil {
		errs = append(errs, apierror.As(err).Fields...)
	}
	if len(errs) > 0 {
		return changesQuery{}, apierror.Fields(errs...)
	}
	return q, nil
}

func (r *Resource) handleChanges(c *gin.Context) error {
	q, err := r.parseChangesQuery(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	if !r.db.Trusted(ctx, r.desc.Table, db.FeedStructure) {
		return apierror.New(apierror.Unavailable, "The change feed of "+r.desc.Path+" is being built from the records there; retry in a few seconds.")
	}
	entries, more, err := r.table.Changes(ctx, q.after, q.cursor, q.limit)
	if err == nil && len(entries) == 0 && q.wait > 0 {
		// Nothing new: hold the request, with no connection or
		// transaction open, until a change commits on any replica or the
		// wait ends; then read again, within a deadline of its own.
		base := baseOf(ctx)
		_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(q.wait + 30*time.Second))
		if r.table.WaitForChange(base, q.after, q.wait) {
			again, cancel := context.WithTimeout(base, r.opts.DBTimeout)
			defer cancel()
			ctx = again
			entries, more, err = r.table.Changes(ctx, q.after, q.cursor, q.limit)
		}
	}
	switch {
	case err == db.ErrCursorGone:
		return apierror.New(apierror.Gone, "This cursor is older than what the feed keeps: read the list again, and follow the feed from the cursor its answer gives (X-Changes-Cursor), or from no cursor.")
	case err != nil:
		return r.storeError(err)
	}
	body, err := r.appendChanges(ctx, make([]byte, 0, 256), q.after, entries, more)
	if err != nil {
		return r.storeError(err)
	}
	c.Data(http.StatusOK, "application/json", body)
	return nil
}

// appendChanges renders a page of the feed: a record changed more than
// once in it is reported once, where it last changed, with its latest
// state; one gone since is reported deleted (its deletion follows anyway).
func (r *Resource) appendChanges(ctx context.Context, b []byte, after int64, entries []db.FeedEntry, more bool) ([]byte, error) {
	lastOf := map[int]int{}
	for i, e := range entries {
		lastOf[e.RecordID] = i
	}
	var ids []any
	for i, e := range entries {
		if lastOf[e.RecordID] == i && !e.Deleted {
			ids = append(ids, e.RecordID)
		}
	}
	rows := map[int]record.Row{}
	if len(ids) > 0 {
		read, err := r.rowsByID(ctx, ids, " ASC")
		if err != nil {
			return nil, err
		}
		for _, row := range read {
			rows[row.ID] = row
		}
	}
	next := after
	if len(entries) > 0 {
		next = entries[len(entries)-1].Seq
	}
	b = append(b, `{"cursor":`...)
	b = apierror.AppendString(b, r.encodeCursor(next))
	b = append(b, `,"more":`...)
	b = strconv.AppendBool(b, more)
	b = append(b, `,"changes":[`...)
	first := true
	for i, e := range entries {
		if lastOf[e.RecordID] != i {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		row, ok := rows[e.RecordID]
		if e.Deleted || !ok {
			b = append(b, `{"op":"delete","id":`...)
			b = strconv.AppendInt(b, int64(e.RecordID), 10)
			b = append(b, '}')
			continue
		}
		b = append(b, `{"op":"upsert","id":`...)
		b = strconv.AppendInt(b, int64(e.RecordID), 10)
		b = append(b, `,"record":`...)
		b = r.appendRecord(b, row, nil)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// feedCursor is the cursor of the feed as it is now, for a list answer's
// X-Changes-Cursor; "" when the feed cannot say (not built yet).
func (r *Resource) feedCursor(ctx context.Context) (string, error) {
	if !r.db.Trusted(ctx, r.desc.Table, db.FeedStructure) {
		return "", nil
	}
	end, err := r.table.FeedEnd(ctx)
	if err != nil {
		return "", err
	}
	return r.encodeCursor(end), nil
}

// feedOperations are the feed's route, and the answers of the methods it
// does not have (without them gin would take "changes" for a record's id).
func (r *Resource) feedOperations(one, lower string) []Operation {
	path := "/" + r.desc.Path + "/changes/"
	ops := []Operation{{ID: lower + "Changes", Method: http.MethodGet, Path: path,
		Summary: "What changed in " + r.desc.Path + ", in the order it committed: follow it from no cursor, then from the cursor each answer gives.",
		Params: []Param{
			{Name: "cursor", In: "query", Doc: "Where the last answer (or a list's X-Changes-Cursor) left off; none: from the beginning of what is kept.", Schema: map[string]any{"type": "string"}},
			{Name: "limit", In: "query", Doc: fmt.Sprintf("Most changes in the answer (default %d, at most %d).", defaultChangesLimit, maxChangesLimit), Schema: map[string]any{"type": "integer", "minimum": 1}},
			{Name: "wait", In: "query", Doc: fmt.Sprintf("Seconds (at most %d) to hold an answer with no change until one commits on any replica.", int(maxChangesWait.Seconds())), Schema: map[string]any{"type": "integer", "minimum": 0}},
		},
		Status: http.StatusOK, Response: one + "Changes",
		Errors: "400 a malformed or foreign cursor, 401, 410 a cursor older than what the feed keeps, 503 the feed is being built",
		handle: r.handleChanges}}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		ops = append(ops, Operation{Method: m, Path: path, handle: onlyGET})
	}
	return ops
}

// changesSchema is the JSON schema of a feed answer.
func changesSchema(one string) obj {
	return obj{"type": "object", "required": []string{"cursor", "more", "changes"}, "properties": obj{
		"cursor": obj{"type": "string", "description": "Where to ask from next time."},
		"more":   obj{"type": "boolean", "description": "More changes follow: ask again at once."},
		"changes": obj{"type": "array", "items": obj{
			"type": "object", "required": []string{"op", "id"},
			"properties": obj{
				"op":     obj{"type": "string", "enum": []string{"upsert", "delete"}},
				"id":     obj{"type": "integer", "minimum": 1},
				"record": obj{"$ref": "#/components/schemas/" + one, "description": "For an upsert: the record as a read shows it now."},
			},
		}},
	}}
}

type baseKey struct{}

// WithBase returns ctx remembering base, the request's context before the
// database deadline was put on it, for an operation that waits longer
// than that deadline without the database (a feed read's wait).
func WithBase(ctx, base context.Context) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

// baseOf returns what WithBase remembered, or ctx.
func baseOf(ctx context.Context) context.Context {
	if base, ok := ctx.Value(baseKey{}).(context.Context); ok {
		return base
	}
	return ctx
}
