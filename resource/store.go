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
	"personnel/ent"
)

// statements are the hand-written SQL of one resource, built once. On
// MySQL the hierarchy checks take share locks ("LOCK IN SHARE MODE" is the
// spelling both MySQL 8 and MariaDB accept); SQLite needs none, because its
// writers are serialised (db.Open).
type statements struct {
	parentOf    string // the parent of a record: walks the ancestor chain
	idByCode    string // the record holding a folded code
	numChildren string // how many records name a record as parent
	search      string // the SQLite search index, quoted
	searchCount string // how many records a search index query finds
	storedCount string // SQLite: the record count its triggers keep
}

func newStatements(c ent.HierarchyColumns, mysql bool) statements {
	lock := ""
	if mysql {
		lock = " LOCK IN SHARE MODE"
	}
	q := func(ident string) string { return "`" + ident + "`" }
	return statements{
		parentOf:    "SELECT " + q(c.Parent) + " FROM " + q(c.Table) + " WHERE " + q(c.ID) + " = ?" + lock,
		idByCode:    "SELECT " + q(c.ID) + " FROM " + q(c.Table) + " WHERE " + q(c.CodeFold) + " = ?",
		numChildren: "SELECT COUNT(*) FROM " + q(c.Table) + " WHERE " + q(c.Parent) + " = ?",
		search:      q(db.SearchTable(c.Table)),
		searchCount: "SELECT COUNT(*) FROM " + q(db.SearchTable(c.Table)) + " WHERE " + q(db.SearchTable(c.Table)) + " MATCH ?",
		storedCount: "SELECT `records` FROM " + q(db.CountTable) + " WHERE `table_name` = '" + c.Table + "'",
	}
}

// Get returns the record with id, or a 404.
func (r *Resource[T]) Get(ctx context.Context, id int) (ent.HierarchyRow, error) {
	it, err := r.a.Get(ctx, r.db.Read(), id, false)
	if err != nil {
		return ent.HierarchyRow{}, r.storeError(err)
	}
	return r.a.Row(it), nil
}

// Create inserts a record. It lets the database check the code (unique
// index) and the parent (foreign key); only when the database refuses
// does it look for every reason, in the same transaction, to report them
// all at once. A successful create is then a single statement.
func (r *Resource[T]) Create(ctx context.Context, in Input) (ent.HierarchyRow, error) {
	var out ent.HierarchyRow
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		it, err := r.a.Create(ctx, tx, ent.HierarchyValues{
			Code: *in.Code, CodeFold: casefold.Fold(*in.Code),
			Name: *in.Name, NameFold: casefold.Fold(*in.Name),
			ParentID: in.Parent,
		})
		if err == nil {
			out = r.a.Row(it)
			return nil
		}
		if !db.IsUniqueViolation(err) && !db.IsForeignKeyViolation(err) {
			return err
		}
		var errs []apierror.FieldError
		if fe := r.checkCode(ctx, tx, 0, *in.Code); fe != nil {
			errs = append(errs, *fe)
		}
		if in.Parent != nil {
			fe, cerr := r.checkParent(ctx, tx, 0, *in.Parent)
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
	})
	if err != nil {
		return ent.HierarchyRow{}, r.writeError(err, in)
	}
	return out, nil
}

// Precondition is an If-Match header: nil when absent.
type Precondition []string

// Update writes in to the record with id: the fields given, or (for PUT)
// code and name plus the parent when given. The record is locked first
// (on MySQL), so the checks below and the write see one state of it.
func (r *Resource[T]) Update(ctx context.Context, id int, in Input, ifMatch Precondition) (ent.HierarchyRow, error) {
	var out ent.HierarchyRow
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		cur, err := r.a.Get(ctx, tx, id, r.db.MySQL())
		if err != nil {
			return err
		}
		row := r.a.Row(cur)
		if err := r.checkPrecondition(ifMatch, row); err != nil {
			return err
		}
		ch, errs := ent.HierarchyChange{}, []apierror.FieldError(nil)
		if in.Code != nil && *in.Code != row.Code {
			// A code taken by another record is left to the unique index
			// (writeError reports it); checking first would cost a query
			// on every update that changes a code.
			ch.Code, ch.CodeFold = in.Code, ptr(casefold.Fold(*in.Code))
		}
		if in.Name != nil && *in.Name != row.Name {
			ch.Name, ch.NameFold = in.Name, ptr(casefold.Fold(*in.Name))
		}
		if in.ParentSet && !samePtr(in.Parent, row.ParentID) {
			ch.SetParent, ch.ParentID = true, in.Parent
			if in.Parent != nil {
				if fe, err := r.checkParent(ctx, tx, id, *in.Parent); err != nil {
					return err
				} else if fe != nil {
					errs = append(errs, *fe)
				}
			}
		}
		if len(errs) > 0 {
			// Already refused: now it is worth a query to report a taken
			// code as well.
			if ch.Code != nil {
				if fe := r.checkCode(ctx, tx, id, *ch.Code); fe != nil {
					errs = append([]apierror.FieldError{*fe}, errs...)
				}
			}
			return apierror.Fields(errs...)
		}
		if ch != (ent.HierarchyChange{}) {
			if err := r.a.Update(ctx, tx, id, ch); err != nil {
				return err
			}
		}
		out = row
		if ch.Code != nil {
			out.Code = *ch.Code
		}
		if ch.Name != nil {
			out.Name = *ch.Name
		}
		if ch.SetParent {
			out.ParentID = ch.ParentID
		}
		return nil
	})
	if err != nil {
		return ent.HierarchyRow{}, r.writeError(err, in)
	}
	return out, nil
}

// Delete removes the record with id, unless other records name it as their
// parent (409). The foreign key refuses the delete too, should a child be
// created concurrently.
func (r *Resource[T]) Delete(ctx context.Context, id int, ifMatch Precondition) error {
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		cur, err := r.a.Get(ctx, tx, id, r.db.MySQL())
		if err != nil {
			return err
		}
		if err := r.checkPrecondition(ifMatch, r.a.Row(cur)); err != nil {
			return err
		}
		var n int
		if err := queryRow(ctx, tx, r.sql.numChildren, []any{id}, &n); err != nil {
			return err
		}
		if n > 0 {
			return r.hasChildren(n)
		}
		return r.a.Delete(ctx, tx, id)
	})
	if err != nil && db.IsForeignKeyViolation(err) {
		return r.hasChildren(0)
	}
	if err != nil {
		return r.storeError(err)
	}
	return nil
}

func (r *Resource[T]) hasChildren(n int) error {
	who := "Other records"
	if n == 1 {
		who = "1 record"
	} else if n > 1 {
		who = strconv.Itoa(n) + " records"
	}
	return apierror.New(apierror.Conflict, fmt.Sprintf(
		"Cannot delete this %s: %s name it as their %s. Move or delete them first.", r.desc.Name, who, r.names.parent))
}

// checkCode reports a code that another record (not id) already holds,
// ignoring letter case.
func (r *Resource[T]) checkCode(ctx context.Context, tx *ent.Client, id int, code string) *apierror.FieldError {
	var other int
	err := queryRow(ctx, tx, r.sql.idByCode, []any{casefold.Fold(code)}, &other)
	if err == nil && other != id {
		return &apierror.FieldError{Field: r.names.code, Msg: r.names.codeExists}
	}
	// A failed look-up is not a verdict; the unique index still decides.
	return nil
}

// checkParent reports a parent that does not exist, is the record itself,
// or lies below it. It walks up from parent to the root; on MySQL every
// step share-locks the row it reads, so no concurrent update can move any
// of those records until this transaction ends. Two updates that would
// together close a cycle therefore serialise (or deadlock, and InTx retries
// the loser), and the second sees the first's result.
func (r *Resource[T]) checkParent(ctx context.Context, tx *ent.Client, id, parent int) (*apierror.FieldError, error) {
	field := r.names.parent
	if parent == id {
		return &apierror.FieldError{Field: field, Msg: r.names.selfParent}, nil
	}
	seen := map[int]bool{}
	for cur := parent; ; {
		var up stdsql.NullInt64
		err := queryRow(ctx, tx, r.sql.parentOf, []any{cur}, &up)
		if errors.Is(err, stdsql.ErrNoRows) && cur == parent {
			return &apierror.FieldError{Field: field, Msg: msgNoSuchParent(strconv.Itoa(parent))}, nil
		}
		if err != nil {
			return nil, err
		}
		if !up.Valid || id == 0 { // a new record cannot be anyone's ancestor
			return nil, nil
		}
		next := int(up.Int64)
		if next == id {
			return &apierror.FieldError{Field: field, Msg: fmt.Sprintf(
				"This %s cannot be placed under %s %d, which is one of its descendants.", r.desc.Name, r.desc.Name, parent)}, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: stored hierarchy has a cycle through id %d", r.cols.Table, next)
		}
		seen[next] = true
		cur = next
	}
}

func (r *Resource[T]) checkPrecondition(ifMatch Precondition, row ent.HierarchyRow) error {
	if ifMatch == nil || ifMatch.Matches(ETag(row)) {
		return nil
	}
	return apierror.New(apierror.PreconditionFailed,
		"The record has changed since you read it (If-Match does not match its ETag); read it again and retry.")
}

// writeError maps what a create or update failed with to what the client
// is told. Constraint violations are races that the checks above could not
// see: another writer took the code or deleted the parent meanwhile.
func (r *Resource[T]) writeError(err error, in Input) error {
	switch {
	case db.IsUniqueViolation(err):
		return apierror.Fields(apierror.FieldError{Field: r.names.code, Msg: r.names.codeExists})
	case db.IsForeignKeyViolation(err) && in.Parent != nil:
		return apierror.Fields(apierror.FieldError{Field: r.names.parent, Msg: msgNoSuchParent(strconv.Itoa(*in.Parent))})
	}
	return r.storeError(err)
}

// storeError maps the errors every operation can meet.
func (r *Resource[T]) storeError(err error) error {
	var ae *apierror.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case ent.IsNotFound(err):
		return apierror.NotFoundError()
	case errors.Is(err, context.Canceled):
		return err
	case db.IsUnavailable(err):
		return apierror.Unavailability(err)
	}
	return err
}

// queryRow runs a one-row query on c and scans the row into dest.
func queryRow(ctx context.Context, c *ent.Client, query string, args []any, dest ...any) error {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return stdsql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

func ptr[V any](v V) *V { return &v }

func samePtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
