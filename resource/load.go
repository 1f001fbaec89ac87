package resource

import (
	"context"
	"fmt"

	"personnel/config"
	"personnel/db"
	"personnel/ent"
)

// Loader loads records in bulk, for the seed command and benchmarks.
type Loader interface {
	Resource() config.Resource
	// Load inserts records in one transaction and returns their ids.
	Load(ctx context.Context, records []NewRecord) ([]int, error)
	// Count returns how many records there are.
	Count(ctx context.Context) (int, error)
}

// NewRecord is a record to load in bulk: a code, a name and (for a
// hierarchy) a parent; its other fields get their defaults.
type NewRecord struct {
	Code, Name string
	ParentID   *int
}

// loadBatch keeps each statement well within SQLite's and MySQL's limits
// on parameters and packet size.
const loadBatch = 500

// Load inserts records in one transaction and returns their ids, for the
// seed command and benchmarks. It skips the API's per-record checks (the
// caller vouches for the data), but not the database's: the unique code
// and the foreign key still hold, and the folded copies are made as on
// every write. On PostgreSQL the rows are streamed with COPY.
func (r *Resource) Load(ctx context.Context, records []NewRecord) ([]int, error) {
	if r.db.Postgres() {
		return r.loadCopy(ctx, records)
	}
	var ids []int
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		ids = ids[:0]
		for start := 0; start < len(records); start += loadBatch {
			batch := records[start:min(start+loadBatch, len(records))]
			var args []any
			values := make([][]Value, 0, len(batch))
			for _, rec := range batch {
				vs := r.newValues(rec)
				args = append(args, r.values(vs)...)
				values = append(values, vs)
			}
			got, err := r.insertRows(ctx, tx, r.insert(len(batch)), len(batch), args)
			if err != nil {
				return err
			}
			ids = append(ids, got...)
			if err := r.loaded(ctx, tx, got, values); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

// loadCopy is Load on PostgreSQL: the ids are drawn from the table's
// sequence first, as an insert would draw them, and the rows, ids
// included, streamed with COPY, several times faster than multi-row
// INSERTs.
func (r *Resource) loadCopy(ctx context.Context, records []NewRecord) ([]int, error) {
	var ids []int
	err := r.db.InCopyTx(ctx, func(tx *db.CopyTx) error {
		seq := r.newSQL().Raw("SELECT nextval(pg_get_serial_sequence(").Param().Raw(", ").Param().
			Raw(")) FROM generate_series(1, ").Param().Raw(")")
		drawn, err := tx.Int64s(ctx, seq.String(), r.newSQL().Ident(r.desc.Table).String(), "id", len(records))
		if err != nil {
			return err
		}
		if len(drawn) != len(records) {
			return fmt.Errorf("%s: drew %d ids for %d records", r.desc.Table, len(drawn), len(records))
		}
		rows := make([][]any, len(records))
		values := make([][]Value, len(records))
		ids = make([]int, len(records))
		for i, rec := range records {
			ids[i], values[i] = int(drawn[i]), r.newValues(rec)
			rows[i] = append([]any{drawn[i]}, r.values(values[i])...)
		}
		if _, err := tx.CopyFrom(ctx, r.desc.Table, append([]string{"id"}, r.writeColumns()...), rows); err != nil {
			return err
		}
		return r.loaded(ctx, tx, ids, values)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// newValues returns the values of every field of rec: its code, name and
// parent, and the default of the others.
func (r *Resource) newValues(rec NewRecord) []Value {
	vs := make([]Value, len(r.fields.List))
	for i, f := range r.fields.List {
		vs[i] = f.Default
	}
	vs[r.fields.Code] = Value{Str: rec.Code, Valid: true}
	vs[r.fields.Name] = Value{Str: rec.Name, Valid: true}
	if p := r.fields.Parent; p >= 0 && rec.ParentID != nil {
		vs[p] = Value{Int: int64(*rec.ParentID), Valid: true}
	}
	return vs
}

// loaded brings what the store keeps beside the table up to date with the
// records ids, just loaded with values, in the loading transaction.
func (r *Resource) loaded(ctx context.Context, tx db.Execer, ids []int, values [][]Value) error {
	if r.fields.Hierarchical() {
		if _, err := r.db.LinkClosure(ctx, tx, r.desc.Table, ids); err != nil {
			return err
		}
	}
	if err := r.indexSubstrings(ctx, tx, ids, values, nil); err != nil {
		return err
	}
	if r.fields.Hierarchical() {
		if err := r.db.CountBelow(ctx, tx, r.desc.Table, ids, 1); err != nil {
			return err
		}
	}
	return r.db.Counted(ctx, tx, r.desc.Table, ids, 1)
}

// Count returns how many records there are.
func (r *Resource) Count(ctx context.Context) (int, error) {
	return r.table(Query{}, nil).count(ctx)
}
