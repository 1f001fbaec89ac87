package resource

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/db"
	"personnel/ent"
)

// Get returns the record with id, or a 404.
func (r *Resource) Get(ctx context.Context, id int) (Row, error) {
	row, err := r.get(ctx, r.db.Read(), id, false)
	if err != nil {
		return Row{}, r.storeError(err)
	}
	return row, nil
}

// get reads the record with id on c; lock locks it for update (except on
// SQLite, whose writers are serialised).
func (r *Resource) get(ctx context.Context, c *ent.Client, id int, lock bool) (Row, error) {
	query := r.sql.get
	if lock {
		query = r.sql.getLocked
	}
	rows, err := r.query(ctx, c, query, id)
	if err != nil {
		return Row{}, err
	}
	if len(rows) == 0 {
		return Row{}, apierror.NotFoundError()
	}
	return rows[0], nil
}

// query runs a query of rows on c.
func (r *Resource) query(ctx context.Context, c *ent.Client, query string, args ...any) ([]Row, error) {
	rs, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	sc := newScanner(r.fields)
	var rows []Row
	for rs.Next() {
		if err := rs.Scan(sc.dest...); err != nil {
			return nil, err
		}
		rows = append(rows, sc.row())
	}
	return rows, rs.Err()
}

// values returns the arguments that store the values of every field, with
// the folded copies beside them, in the order of writeColumns.
func (r *Resource) values(vs []Value) []any {
	args := make([]any, 0, len(vs)+4)
	for i, f := range r.fields.List {
		args = append(args, sqlValue(f.Kind, vs[i]))
		if f.Fold != "" {
			args = append(args, foldArg(vs[i]))
		}
	}
	return args
}

func foldArg(v Value) any {
	if !v.Valid {
		return nil
	}
	return casefold.Fold(v.Str)
}

// Create inserts a record: the fields given, and the default (or null) of
// the others. It lets the database check the code (unique index) and the
// parent (foreign key); only when the database refuses does it look for
// every reason, in the same transaction, to report them all at once. A
// successful create is then a single statement. PostgreSQL aborts a
// transaction at its first error, so there the reasons are looked for in
// a new one.
func (r *Resource) Create(ctx context.Context, in Input) (Row, error) {
	row := Row{Values: make([]Value, len(r.fields.List))}
	for i, f := range r.fields.List {
		row.Values[i] = f.Default
		if in.Given[i] {
			row.Values[i] = in.Values[i]
		}
	}
	refused := func(err error) bool { return db.IsUniqueViolation(err) || db.IsForeignKeyViolation(err) }
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		ids, err := r.insertRows(ctx, tx, r.insertOne, 1, r.values(row.Values))
		if err == nil {
			row.ID = ids[0]
			linked := 0
			if p := r.fields.Parent; p >= 0 {
				// The rows link the record to every ancestor, so there
				// is one per level: too many is a chain too deep.
				if linked, err = r.db.LinkClosure(ctx, tx, r.desc.Table, ids); err != nil {
					return err
				}
				if linked-1 >= MaxDepth {
					return apierror.Fields(r.tooDeep(int(row.Values[p].Int)))
				}
			}
			if err := r.indexSubstrings(ctx, tx, ids, [][]Value{row.Values}, nil); err != nil {
				return err
			}
			if linked > 1 { // it has ancestors to count it
				if err := r.db.CountBelow(ctx, tx, r.desc.Table, ids, 1); err != nil {
					return err
				}
			}
			return r.db.Counted(ctx, tx, r.desc.Table, ids, 1)
		}
		if !refused(err) || r.db.Postgres() {
			return err
		}
		return r.whyRefused(ctx, tx, row, err)
	})
	if r.db.Postgres() && refused(err) {
		cause := err
		err = r.db.InTx(ctx, func(tx *ent.Client) error { return r.whyRefused(ctx, tx, row, cause) })
	}
	if err != nil {
		return Row{}, r.writeError(err, in)
	}
	return row, nil
}

// whyRefused looks for every reason the database refused to insert row
// with err (a unique or foreign key violation): a code already taken, a
// parent missing. It returns them all, or err when it finds none.
func (r *Resource) whyRefused(ctx context.Context, tx *ent.Client, row Row, err error) error {
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
// checks below and the write see one state of it. Only fields whose value changes are written, so concurrent
// updates of different fields both take effect.
func (r *Resource) Update(ctx context.Context, id int, in Input, ifMatch Precondition) (Row, error) {
	var out Row
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		cur, err := r.get(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := r.checkPrecondition(ifMatch, cur); err != nil {
			return err
		}
		var set []string
		var args []any
		var changed []int
		var errs []apierror.FieldError
		out = Row{ID: cur.ID, Values: append([]Value(nil), cur.Values...)}
		codeChanged := false
		for i := range r.fields.List {
			f := &r.fields.List[i]
			if !in.Given[i] || in.Values[i] == cur.Values[i] {
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
			codeChanged = codeChanged || f.Unique
			out.Values[i] = v
			changed = append(changed, i)
			set, args = append(set, f.Column), append(args, sqlValue(f.Kind, v))
			if f.Fold != "" {
				set, args = append(set, f.Fold), append(args, foldArg(v))
			}
		}
		if len(errs) > 0 {
			// Already refused: now it is worth a query to report a taken
			// code as well.
			if codeChanged {
				if fe := r.checkCode(ctx, tx, id, out.Values[r.fields.Code].Str); fe != nil {
					errs = append([]apierror.FieldError{*fe}, errs...)
				}
			}
			return apierror.Fields(errs...)
		}
		if len(set) == 0 {
			return nil
		}
		query, qargs := r.updateSQL(id, set, args)
		res, err := tx.ExecContext(ctx, query, qargs...)
		if err != nil {
			return err
		}
		// MySQL counts changed rows, SQLite and PostgreSQL matched rows;
		// the record is locked or the writer serialised, so none means it
		// is gone.
		if n, err := res.RowsAffected(); err == nil && n == 0 && !r.db.MySQL() {
			return apierror.NotFoundError()
		}
		if slices.Contains(changed, r.fields.Parent) {
			if err := r.db.MoveClosure(ctx, tx, r.desc.Table, id); err != nil {
				return err
			}
		}
		if err := r.reindexSubstrings(ctx, tx, id, changed, out.Values); err != nil {
			return err
		}
		return r.db.Updated(ctx, tx, r.desc.Table)
	})
	if err != nil {
		return Row{}, r.writeError(err, in)
	}
	return out, nil
}

// Delete removes the record with id, unless other records name it as their
// parent (409). The foreign key refuses the delete too, should a child be
// created concurrently.
func (r *Resource) Delete(ctx context.Context, id int, ifMatch Precondition) error {
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
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
			// Locked, with no child: its ancestors are as its closure
			// rows say, and stay so until it is gone.
			if err := r.db.CountBelow(ctx, tx, r.desc.Table, []int{id}, -1); err != nil {
				return err
			}
			if err := r.db.DropCounts(ctx, tx, r.desc.Table, id); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, r.sql.remove, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		return r.db.Counted(ctx, tx, r.desc.Table, []int{id}, -1)
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
func (r *Resource) checkCode(ctx context.Context, tx *ent.Client, id int, code string) *apierror.FieldError {
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
func (r *Resource) checkParent(ctx context.Context, tx *ent.Client, id, parent int) (*apierror.FieldError, error) {
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

func (r *Resource) checkPrecondition(ifMatch Precondition, row Row) error {
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
	switch {
	case db.IsUniqueViolation(err):
		return apierror.Fields(apierror.FieldError{Field: r.fields.List[r.fields.Code].Key, Msg: r.msgCodeExists})
	case db.IsForeignKeyViolation(err) && p >= 0 && in.Given[p] && in.Values[p].Valid:
		return apierror.Fields(apierror.FieldError{Field: r.fields.List[p].Key, Msg: msgNoSuchParent(strconv.FormatInt(in.Values[p].Int, 10))})
	}
	return r.storeError(err)
}

// storeError maps the errors every operation can meet.
func (r *Resource) storeError(err error) error {
	var ae *apierror.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.Canceled):
		return err
	case db.IsUnavailable(err):
		return apierror.Unavailability(err)
	}
	return err
}
