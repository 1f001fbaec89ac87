package db

import (
	"context"
	"fmt"
	"slices"

	"personnel/ent"
)

// BulkLoad runs load, which inserts many records into table. On SQLite it
// gives the writer a large page cache meanwhile. On PostgreSQL it analyzes
// the table and its substring indexes afterwards: until autovacuum gets
// round to it the planner knows nothing of the new rows, and plans the
// recursive hierarchy queries and the searches with scans several times
// slower than their index plans. On MySQL it just runs load.
func (d *DB) BulkLoad(ctx context.Context, table string, load func() error) error {
	i := slices.IndexFunc(ent.ResourceTables(), func(c ent.ResourceTable) bool { return c.Table == table })
	if i < 0 {
		return fmt.Errorf("bulk load: no resource table %q", table)
	}
	switch {
	case d.Postgres():
		if err := load(); err != nil {
			return err
		}
		t := ent.ResourceTables()[i]
		tables := []string{table}
		for _, col := range t.Search {
			tables = append(tables, SubstringTable(table, col))
		}
		for _, name := range tables {
			if _, err := d.Write().ExecContext(ctx, d.SQL().Raw("ANALYZE ").Ident(name).String()); err != nil {
				return err
			}
		}
		return nil
	case d.SQLite():
		w := d.Write()
		if _, err := w.ExecContext(ctx, "PRAGMA cache_size = -65536"); err != nil {
			return err
		}
		defer w.ExecContext(context.WithoutCancel(ctx), "PRAGMA cache_size = -2000")
	}
	return load()
}
