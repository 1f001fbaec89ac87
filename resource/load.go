package resource

import (
	"context"

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
// every write.
func (r *Resource) Load(ctx context.Context, records []NewRecord) ([]int, error) {
	var ids []int
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		ids = ids[:0]
		for start := 0; start < len(records); start += loadBatch {
			batch := records[start:min(start+loadBatch, len(records))]
			var args []any
			values := make([][]Value, 0, len(batch))
			for _, rec := range batch {
				vs := make([]Value, len(r.fields.List))
				for i, f := range r.fields.List {
					vs[i] = f.Default
				}
				vs[r.fields.Code] = Value{Str: rec.Code, Valid: true}
				vs[r.fields.Name] = Value{Str: rec.Name, Valid: true}
				if p := r.fields.Parent; p >= 0 && rec.ParentID != nil {
					vs[p] = Value{Int: int64(*rec.ParentID), Valid: true}
				}
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

// loaded brings what the store keeps beside the table up to date with the
// records ids, just loaded with values, in the loading transaction.
func (r *Resource) loaded(ctx context.Context, tx db.Execer, ids []int, values [][]Value) error {
	if err := r.indexSubstrings(ctx, tx, ids, values, nil); err != nil {
		return err
	}
	return r.db.AddToCount(ctx, tx, r.desc.Table, len(ids))
}

// Count returns how many records there are.
func (r *Resource) Count(ctx context.Context) (int, error) {
	return r.table(Query{}, nil).count(ctx)
}
