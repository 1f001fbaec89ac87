package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"personnel/logging"
	"personnel/record"
)

// The audit trail: every write of a resource table appends, in the write's
// own transaction, one entry per record it changes (the audit keeper, told
// of every write by the table's hook): when, who (the user of the API, or
// the command of the command line, db.ActorOf), the request's id, which
// record, what was done, and the fields that changed, each as [before,
// after] as the API shows them (before null for a create, after null for
// a delete). A write that fails leaves no entry, and an entry never
// exists without its write. Users are not a resource: nothing of theirs,
// passwords and keys least of all, enters the trail.
//
//	personnel_audit (id, at, actor_id, actor_username, actor_command,
//	                 request_id, resource, record_id, action, changes)
//
// Entries are read newest first, filtered (AuditFilter), and pruned in
// small batches when PERSONNEL_AUDIT_RETENTION says so.

// AuditTable holds the audit trail.
const AuditTable = "personnel_audit"

// Audit actions.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// auditColumns are the columns an entry is written to, in order.
var auditColumns = []string{"at", "actor_id", "actor_username", "actor_command", "request_id", "resource", "record_id", "action", "changes"}

// auditBatch bounds the entries of one multi-row insert.
const auditBatch = 200

// auditKeeper appends the entries of every write of a table.
type auditKeeper struct {
	t     *Table
	names Names
}

func newAuditKeeper(t *Table) *auditKeeper {
	names := Names{"audit": AuditTable}
	for i, c := range auditColumns {
		names["c"+strconv.Itoa(i)] = c
	}
	return &auditKeeper{t: t, names: names}
}

// Inserted appends a create of each record, every field as its after.
func (k *auditKeeper) Inserted(ctx context.Context, w *Write, rows []record.Row) error {
	entries := make([][]any, len(rows))
	for i, r := range rows {
		entries[i] = k.entry(ctx, r.ID, ActionCreate, nil, r.Values, nil)
	}
	return k.append(ctx, w, entries)
}

// Updated appends an update of each record, the fields that changed.
func (k *auditKeeper) Updated(ctx context.Context, w *Write, changes []Change) error {
	entries := make([][]any, len(changes))
	for i, c := range changes {
		entries[i] = k.entry(ctx, c.After.ID, ActionUpdate, c.Before.Values, c.After.Values, c.Changed)
	}
	return k.append(ctx, w, entries)
}

// Deleting appends a delete of each record, every field as its before.
func (k *auditKeeper) Deleting(ctx context.Context, w *Write, rows []record.Row) error {
	entries := make([][]any, len(rows))
	for i, r := range rows {
		entries[i] = k.entry(ctx, r.ID, ActionDelete, r.Values, nil, nil)
	}
	return k.append(ctx, w, entries)
}

// entry is the column values of one entry: before and after are nil for
// a create and a delete; fields lists the fields of an update (nil: all).
func (k *auditKeeper) entry(ctx context.Context, id int, action string, before, after []record.Value, fields []int) []any {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	add := func(i int) {
		f := &k.t.Fields.List[i]
		var pair [2]any
		if before != nil {
			pair[0] = f.JSON(before[i])
		}
		if after != nil {
			pair[1] = f.JSON(after[i])
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		key, _ := json.Marshal(f.Key)
		val, _ := json.Marshal(pair)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	if fields == nil {
		for i := range k.t.Fields.List {
			add(i)
		}
	} else {
		for _, i := range fields {
			add(i)
		}
	}
	b.WriteByte('}')
	a := ActorOf(ctx)
	var actorID, username, command, requestID any
	if a.Command != "" {
		command = a.Command
	} else if a.Username != "" {
		actorID, username = a.UserID, a.Username
	}
	if rid := logging.RequestID(ctx); rid != "" {
		requestID = rid
	}
	return []any{time.Now().UnixMicro(), actorID, username, command, requestID, k.t.Res.Name, int64(id), action, b.String()}
}

// append writes entries: streamed with COPY in a PostgreSQL bulk load,
// multi-row inserts otherwise.
func (k *auditKeeper) append(ctx context.Context, w *Write, entries [][]any) error {
	if len(entries) == 0 {
		return nil
	}
	if c, ok := w.Tx.(bulkInserter); ok {
		_, err := c.CopyFrom(ctx, AuditTable, auditColumns, entries)
		return err
	}
	for start := 0; start < len(entries); start += auditBatch {
		part := entries[start:min(start+auditBatch, len(entries))]
		args := make([]any, 0, len(part)*len(auditColumns))
		for _, e := range part {
			args = append(args, e...)
		}
		query := k.t.db.Render("INSERT INTO {audit} ("+columnMarks(len(auditColumns))+") VALUES "+Tuples(len(part), len(auditColumns)), k.names)
		if err := execLater(ctx, w.Tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// AuditEntry is one entry of the audit trail.
type AuditEntry struct {
	ID        int64
	At        time.Time // UTC, to the microsecond
	Actor     Actor
	RequestID string
	Resource  string
	RecordID  int64
	Action    string
	Changes   json.RawMessage // {field: [before, after], ...}
}

// AuditFilter selects entries; zero fields select any.
type AuditFilter struct {
	Resource  string
	RecordID  int64
	Actor     string // username
	Action    string
	RequestID string
	AtGTE     time.Time
	AtLTE     time.Time
}

// where writes the filter's conditions.
func (f AuditFilter) where(s *SQL) *SQL {
	first := true
	and := func(col, op string, v any) {
		if first {
			s.Raw(" WHERE ")
			first = false
		} else {
			s.Raw(" AND ")
		}
		s.Ident(col).Raw(" " + op + " ").Arg(v)
	}
	if f.Resource != "" {
		and("resource", "=", f.Resource)
	}
	if f.RecordID != 0 {
		and("record_id", "=", f.RecordID)
	}
	if f.Actor != "" {
		and("actor_username", "=", f.Actor)
	}
	if f.Action != "" {
		and("action", "=", f.Action)
	}
	if f.RequestID != "" {
		and("request_id", "=", f.RequestID)
	}
	if !f.AtGTE.IsZero() {
		and("at", ">=", f.AtGTE.UnixMicro())
	}
	if !f.AtLTE.IsZero() {
		and("at", "<=", f.AtLTE.UnixMicro())
	}
	return s
}

// Audit returns the entries f selects, newest first, limit from offset, and
// how many f selects in all.
func (d *DB) Audit(ctx context.Context, f AuditFilter, limit, offset int) ([]AuditEntry, int, error) {
	count := f.where(d.SQL().Raw("SELECT COUNT(*) FROM ").Ident(AuditTable))
	var total int
	if err := QueryRow(ctx, d.Reader(), count.String(), count.Args, &total); err != nil {
		return nil, 0, err
	}
	if offset >= total {
		return nil, total, nil
	}
	s := d.SQL().Raw("SELECT id, at, actor_id, actor_username, actor_command, request_id, resource, record_id, action, changes FROM ").Ident(AuditTable)
	f.where(s).Raw(" ORDER BY id DESC LIMIT ").Arg(limit).Raw(" OFFSET ").Arg(offset)
	var out []AuditEntry
	err := queryRows(ctx, d.Reader(), s.String(), func(scan func(dest ...any) error) error {
		var e AuditEntry
		var at int64
		var actorID *int64
		var username, command, requestID *string
		var changes string
		if err := scan(&e.ID, &at, &actorID, &username, &command, &requestID, &e.Resource, &e.RecordID, &e.Action, &changes); err != nil {
			return err
		}
		e.At = time.UnixMicro(at).UTC()
		if actorID != nil {
			e.Actor.UserID = int(*actorID)
		}
		if username != nil {
			e.Actor.Username = *username
		}
		if command != nil {
			e.Actor.Command = *command
		}
		if requestID != nil {
			e.RequestID = *requestID
		}
		e.Changes = json.RawMessage(changes)
		out = append(out, e)
		return nil
	}, s.Args...)
	return out, total, err
}

// pruneBatch is how many entries one transaction of pruning deletes, so
// that pruning never holds a writer (SQLite's one) for long.
const pruneBatch = 500

// PruneAudit deletes the entries older than retention, a batch per
// transaction, and returns how many it deleted.
func (d *DB) PruneAudit(ctx context.Context, retention time.Duration) (int, error) {
	if retention <= 0 {
		return 0, errors.New("db: no audit retention to prune by")
	}
	before := time.Now().Add(-retention).UnixMicro()
	names := Names{"audit": AuditTable}
	sel := d.Render("SELECT id FROM {audit} WHERE at < ? ORDER BY at LIMIT ?", names)
	total := 0
	for {
		ids, err := queryInts(ctx, d.Reader(), sel, before, pruneBatch)
		if err != nil || len(ids) == 0 {
			return total, err
		}
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		del := d.Render("DELETE FROM {audit} WHERE id IN ("+Marks(len(ids))+")", names)
		if err := d.InTx(ctx, func(tx Tx) error {
			_, err := tx.ExecContext(ctx, del, args...)
			return err
		}); err != nil {
			return total, fmt.Errorf("pruning the audit trail: %w", err)
		}
		total += len(ids)
		if len(ids) < pruneBatch {
			return total, nil
		}
	}
}
