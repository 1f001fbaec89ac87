package resource

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"strconv"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/db"
	"personnel/record"
)

// The operations of the store: each reads what it must check under the
// right locks, then writes through the resource's table (db.Table), the
// one write hook that keeps every structure beside it in step.

// Get returns the record with id, or a 404.
func (r *Resource) Get(ctx context.Context, id int) (record.Row, error) {
	row, err := r.get(ctx, r.db.Reader(), id, false)
	if err != nil {
		return record.Row{}, r.storeError(err)
	}
	return row, nil
}

// get reads the record with id in tx; lock locks it for update (except on
// SQLite, whose writers are serialised).
func (r *Resource) get(ctx context.Context, tx db.Tx, id int, lock bool) (record.Row, error) {
	query := r.sql.get
	if lock {
		query = r.sql.getLocked
	}
	rows, err := r.query(ctx, tx, query, id)
	if err != nil {
		return record.Row{}, err
	}
	if len(rows) == 0 {
		return record.Row{}, apierror.NotFoundError()
	}
	return rows[0], nil
}

// query runs a query of rows in tx.
func (r *Resource) query(ctx context.Context, tx db.Tx, query string, args ...any) ([]record.Row, error) {
	rs, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	sc := r.scanners.Get().(*record.Scanner)
	defer r.scanners.Put(sc)
	var rows []record.Row
	for rs.Next() {
		if err := rs.Scan(sc.Dest...); err != nil {
			return nil, err
		}
		rows = append(rows, sc.Row())
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if err := rs.Close(); err != nil {
		return nil, err
	}
	// The lists of refs fields, one statement a field for the page.
	return rows, r.table.LoadRefs(ctx, tx, rows)
}

// newRow is the record a create stores: the fields in gives, and the
// default (or null) of the others.
func (r *Resource) newRow(in Input) record.Row {
	row := record.Row{Values: r.fields.Defaults()}
	for i := range r.fields.List {
		if in.Given[i] {
			row.Values[i] = in.Values[i]
		}
	}
	return row
}

// refused reports whether the database refused a write for a reason a
// field explains: a code taken, a parent missing.
func refused(err error) bool { return db.IsUniqueViolation(err) || db.IsForeignKeyViolation(err) }

// Create inserts a record. It lets the database check the code (unique
// index) and the parent (foreign key); only when the database refuses
// does it look for every reason, in the same transaction, to report them
// all at once. PostgreSQL aborts a transaction at its first error, so
// there the reasons are looked for in a new one.
func (r *Resource) Create(ctx context.Context, in Input) (record.Row, error) {
	row := r.newRow(in)
	err := r.db.InTx(ctx, func(tx db.Tx) error {
		rows := []record.Row{row}
		err := r.table.Insert(ctx, tx, rows)
		var unknown *db.UnknownRefError
		if errors.As(err, &unknown) {
			// Refused before anything was written (refs.go): worth a query
			// to report a taken code as well.
			errs := r.unknownRefs(unknown)
			if fe := r.checkCode(ctx, tx, 0, row.Values[r.fields.Code].Str); fe != nil {
				errs = append([]apierror.FieldError{*fe}, errs...)
			}
			return apierror.Fields(errs...)
		}
		if err == nil || !refused(err) || r.db.Postgres() {
			row.ID = rows[0].ID
			return err
		}
		return r.whyRefused(ctx, tx, row, err)
	})
	if r.db.Postgres() && refused(err) {
		cause := err
		err = r.db.InTx(ctx, func(tx db.Tx) error { return r.whyRefused(ctx, tx, row, cause) })
	}
	if err != nil {
		return record.Row{}, r.writeError(err, in)
	}
	return row, nil
}

// whyRefused looks for every reason the database refused to insert row
// with err (a unique or foreign key violation): a code already taken, a
// parent missing. It returns them all, or err when it finds none.
func (r *Resource) whyRefused(ctx context.Context, tx db.Tx, row record.Row, err error) error {
	var errs []apierror.FieldError
	if fe := r.checkCode(ctx, tx, 0, row.Values[r.fields.Code].Str); fe != nil {
		errs = append(errs, *fe)
	}
	if p := r.fields.Parent; p >= 0 && row.Values[p].Valid {
		fe, cerr := r.checkParent(ctx, tx, 0, int(row.Values[p].Int))
		if cerr != nil {
			return cerr
		}
		if fe != nil {
			errs = append(errs, *fe)
		}
	}
	if len(errs) == 0 {
		return err // writeError says what the constraint was
	}
	return apierror.Fields(errs...)
}

// Update writes the fields in gives to the record with id. The record is
// locked first (SQLite needs no lock: its writers are serialised), so the
// checks below and the write see one state of it. Only fields whose value
// changes are written, so concurrent updates of different fields both
// take effect.
func (r *Resource) Update(ctx context.Context, id int, in Input, ifMatch Precondition) (record.Row, error) {
	var out record.Row
	err := r.db.InTx(ctx, func(tx db.Tx) error {
		cur, err := r.get(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := r.checkPrecondition(ifMatch, cur); err != nil {
			return err
		}
		out = record.Row{ID: cur.ID, Values: append([]record.Value(nil), cur.Values...)}
		var errs []apierror.FieldError
		codeChanged := false
		for i := range r.fields.List {
			if !in.Given[i] || in.Values[i].Equal(cur.Values[i]) {
				continue
			}
			v := in.Values[i]
			if i == r.fields.Parent && v.Valid {
				fe, err := r.checkParent(ctx, tx, id, int(v.Int))
				if err != nil {
					return err
				}
				if fe != nil {
					errs = append(errs, *fe)
				}
			}
			// A code taken by another record is left to the unique index
			// (writeError reports it); checking first would cost a query
			// on every update that changes a code.
			codeChanged = codeChanged || r.fields.List[i].Unique
			out.Values[i] = v
		}
		if len(errs) > 0 {
			// Already refused: now it is worth a query or two to report a
			// taken code and unknown references as well.
			var unknown *db.UnknownRefError
			if err := r.table.CheckRefs(ctx, tx, cur, out); errors.As(err, &unknown) {
				errs = append(errs, r.unknownRefs(unknown)...)
			}
			if codeChanged {
				if fe := r.checkCode(ctx, tx, id, out.Values[r.fields.Code].Str); fe != nil {
					errs = append([]apierror.FieldError{*fe}, errs...)
				}
			}
			return apierror.Fields(errs...)
		}
		_, err = r.table.Update(ctx, tx, cur, out)
		return err
	})
	if err != nil {
		return record.Row{}, r.writeError(err, in)
	}
	return out, nil
}

// Delete removes the record with id, unless other records name it as their
// parent (409). The foreign key refuses the delete too, should a child be
// created concurrently.
func (r *Resource) Delete(ctx context.Context, id int, ifMatch Precondition) error {
	err := r.db.InTx(ctx, func(tx db.Tx) error {
		cur, err := r.get(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := r.checkPrecondition(ifMatch, cur); err != nil {
			return err
		}
		if r.fields.Hierarchical() {
			var n int
			if err := db.QueryRow(ctx, tx, r.sql.numChildren, []any{id}, &n); err != nil {
				return err
			}
			if n > 0 {
				return r.hasChildren(n)
			}
		}
		return r.table.Delete(ctx, tx, cur)
	})
	if err != nil && db.IsForeignKeyViolation(err) {
		return r.hasChildren(0)
	}
	if err != nil {
		return r.storeError(err)
	}
	return nil
}

func (r *Resource) hasChildren(n int) error {
	who := "Other records"
	if n == 1 {
		who = "1 record"
	} else if n > 1 {
		who = strconv.Itoa(n) + " records"
	}
	return apierror.New(apierror.Conflict, fmt.Sprintf(
		"Cannot delete this %s: %s name it as their %s. Move or delete them first.", r.desc.Name, who, r.fields.List[r.fields.Parent].Key))
}

// checkCode reports a code that another record (not id) already holds,
// ignoring letter case.
func (r *Resource) checkCode(ctx context.Context, tx db.Tx, id int, code string) *apierror.FieldError {
	var other int
	err := db.QueryRow(ctx, tx, r.sql.idByCode, []any{casefold.Fold(code)}, &other)
	if err == nil && other != id {
		return &apierror.FieldError{Field: r.fields.List[r.fields.Code].Key, Msg: r.msgCodeExists}
	}
	// A failed look-up is not a verdict; the unique index still decides.
	return nil
}

// checkParent reports a parent that does not exist, is the record itself,
// or lies below it. It walks up from parent to the root; on MySQL and
// PostgreSQL every step share-locks the row it reads (TiDB, which has no
// shared locks, locks it exclusively), so no concurrent update can move
// any of those records until this transaction ends. Two updates that would
// together close a cycle therefore serialise (or deadlock, and InTx retries
// the loser), and the second sees the first's result.
func (r *Resource) checkParent(ctx context.Context, tx db.Tx, id, parent int) (*apierror.FieldError, error) {
	field := r.fields.List[r.fields.Parent].Key
	if parent == id {
		return &apierror.FieldError{Field: field, Msg: "This " + r.desc.Name + " cannot be its own parent."}, nil
	}
	seen := map[int]bool{}
	for cur := parent; ; {
		var up stdsql.NullInt64
		err := db.QueryRow(ctx, tx, r.sql.parentOf, []any{cur}, &up)
		if errors.Is(err, stdsql.ErrNoRows) && cur == parent {
			return &apierror.FieldError{Field: field, Msg: msgNoSuchParent(strconv.Itoa(parent))}, nil
		}
		if err != nil {
			return nil, err
		}
		if id == 0 { // a new record cannot be anyone's ancestor
			return nil, nil
		}
		if !up.Valid { // the root: the record would sit len(seen)+1 levels below it
			var height int
			if err := db.QueryRow(ctx, tx, r.sql.height, []any{id}, &height); err != nil {
				return nil, err
			}
			if len(seen)+1+height >= MaxDepth {
				fe := r.tooDeep(parent)
				return &fe, nil
			}
			return nil, nil
		}
		next := int(up.Int64)
		if next == id {
			return &apierror.FieldError{Field: field, Msg: fmt.Sprintf(
				"This %s cannot be placed under %s %d, which is one of its descendants.", r.desc.Name, r.desc.Name, parent)}, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: stored hierarchy has a cycle through id %d", r.desc.Table, next)
		}
		seen[next] = true
		cur = next
	}
}

// tooDeep is the error of a record that would lie MaxDepth or more levels
// below its root: deeper than the hierarchy queries follow.
func (r *Resource) tooDeep(parent int) apierror.FieldError {
	return apierror.FieldError{Field: r.fields.List[r.fields.Parent].Key, Msg: fmt.Sprintf(
		"This %s cannot be placed under %s %d: the hierarchy would be more than %d levels deep.", r.desc.Name, r.desc.Name, parent, MaxDepth)}
}

// moveTooLarge is the error of a move larger than PERSONNEL_MOVE_LIMIT.
func (r *Resource) moveTooLarge(e *db.MoveTooLargeError) apierror.FieldError {
	return apierror.FieldError{Field: r.fields.List[r.fields.Parent].Key, Msg: fmt.Sprintf(
		"This move would move %d %s records at once (rewriting %d rows of the hierarchy, more than the limit of %d); "+
			"move some of the records below it first.", e.Records, r.desc.Name, e.Rows, e.Limit)}
}

func (r *Resource) checkPrecondition(ifMatch Precondition, row record.Row) error {
	if ifMatch == nil || ifMatch.Matches(r.ETag(row)) {
		return nil
	}
	return apierror.New(apierror.PreconditionFailed,
		"The record has changed since you read it (If-Match does not match its ETag); read it again and retry.")
}

// writeError maps what a create or update failed with to what the client
// is told. Constraint violations are races that the checks above could not
// see: another writer took the code or deleted the parent meanwhile.
func (r *Resource) writeError(err error, in Input) error {
	p := r.fields.Parent
	var deep *db.TooDeepError
	var large *db.MoveTooLargeError
	switch {
	case db.IsUniqueViolation(err):
		return apierror.Fields(apierror.FieldError{Field: r.fields.List[r.fields.Code].Key, Msg: r.msgCodeExists})
	case db.IsForeignKeyViolation(err) && p >= 0 && in.Given[p] && in.Values[p].Valid:
		return apierror.Fields(apierror.FieldError{Field: r.fields.List[p].Key, Msg: msgNoSuchParent(strconv.FormatInt(in.Values[p].Int, 10))})
	case errors.As(err, &deep):
		return apierror.Fields(r.tooDeep(deep.Parent))
	case errors.As(err, &large):
		return apierror.Fields(r.moveTooLarge(large))
	}
	return r.storeError(err)
}

// storeError maps the errors every operation can meet.
func (r *Resource) storeError(err error) error {
	if e := r.refError(err); e != nil {
		return e
	}
	var ae *apierror.Error
	var busy *db.BusyError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, db.ErrGone):
		return apierror.NotFoundError()
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &busy):
		return apierror.Busy(err)
	case db.IsUnavailable(err):
		return apierror.Unavailability(err)
	}
	return err
}
