package resource

import (
	"context"

	"personnel/config"
	"personnel/record"
)

// Loader loads records in bulk, for the seed command and benchmarks.
type Loader interface {
	Resource() config.Resource
	// Load inserts records in one transaction and returns their ids.
	Load(ctx context.Context, records []NewRecord) ([]int, error)
	// Count returns how many records there are.
	Count(ctx context.Context) (int, error)
	// BulkLoad runs load, which calls Load many times, the way a load of
	// many records is fastest (see db.Table.BulkLoad).
	BulkLoad(ctx context.Context, load func() error) error
}

// NewRecord is a record to load in bulk: a code, a name and (for a
// hierarchy) a parent; its other fields get their defaults.
type NewRecord struct {
	Code, Name string
	ParentID   *int
}

// Load inserts records in one transaction, through the table's write hook
// as every write is, and returns their ids, for the seed command and
// benchmarks. It skips the API's per-record checks (the caller vouches
// for the data), but not the database's: the unique code and the foreign
// key still hold.
func (r *Resource) Load(ctx context.Context, records []NewRecord) ([]int, error) {
	rows := make([]record.Row, len(records))
	for i, rec := range records {
		rows[i] = record.Row{Values: r.fields.Defaults()}
		rows[i].Values[r.fields.Code] = record.Value{Str: rec.Code, Valid: true}
		rows[i].Values[r.fields.Name] = record.Value{Str: rec.Name, Valid: true}
		if p := r.fields.Parent; p >= 0 && rec.ParentID != nil {
			rows[i].Values[p] = record.Value{Int: int64(*rec.ParentID), Valid: true}
		}
	}
	if err := r.table.Load(ctx, rows); err != nil {
		return nil, err
	}
	ids := make([]int, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	return ids, nil
}

// Count returns how many records there are.
func (r *Resource) Count(ctx context.Context) (int, error) {
	return r.listSource(Query{}, nil).count(ctx)
}

// BulkLoad runs load, which calls Load many times (db.Table.BulkLoad).
func (r *Resource) BulkLoad(ctx context.Context, load func() error) error {
	return r.table.BulkLoad(ctx, load)
}
