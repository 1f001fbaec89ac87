package resource

import (
	"context"

	"personnel/casefold"
	"personnel/config"
	"personnel/ent"
)

// NewRecord is a record to load in bulk.
type NewRecord struct {
	Code, Name string
	ParentID   *int
}

// Loader loads records in bulk, for the seed command and benchmarks. It
// skips the API's per-record checks (the caller vouches for the data), but
// not the database's: the unique code and the foreign key still hold, and
// the folded copies are made as on every write.
type Loader interface {
	Resource() config.Resource
	// Load inserts records in one transaction and returns their ids.
	Load(ctx context.Context, records []NewRecord) ([]int, error)
	// Count returns how many records there are.
	Count(ctx context.Context) (int, error)
}

// Resource returns the description r serves.
func (r *Resource[T]) Resource() config.Resource { return r.desc }

// Load implements Loader.
func (r *Resource[T]) Load(ctx context.Context, records []NewRecord) ([]int, error) {
	vs := make([]ent.HierarchyValues, len(records))
	for i, rec := range records {
		vs[i] = ent.HierarchyValues{
			Code: rec.Code, CodeFold: casefold.Fold(rec.Code),
			Name: rec.Name, NameFold: casefold.Fold(rec.Name),
			ParentID: rec.ParentID,
		}
	}
	var ids []int
	// Batches keep each statement well within SQLite's and MySQL's limits
	// on parameters and packet size.
	const batch = 1000
	err := r.db.InTx(ctx, func(tx *ent.Client) error {
		ids = ids[:0]
		for start := 0; start < len(vs); start += batch {
			got, err := r.a.CreateMany(ctx, tx, vs[start:min(start+batch, len(vs))])
			if err != nil {
				return err
			}
			ids = append(ids, got...)
		}
		return nil
	})
	return ids, err
}

// Count implements Loader.
func (r *Resource[T]) Count(ctx context.Context) (int, error) {
	return r.table(Query{}, nil).count(ctx)
}
