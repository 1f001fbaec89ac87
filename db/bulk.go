package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"personnel/ent"
)

// BulkLoad runs load, which inserts many records into table. On SQLite it
// gives the writer a large page cache meanwhile, and drops the indexes on
// gram of the table's substring indexes until the end, when it makes them
// again by sorting their rows once: inserted row by row at random places,
// they took most of a load's time. On PostgreSQL it vacuums and analyzes
// the table and its substring indexes afterwards: until autovacuum gets
// round to it the planner knows nothing of the new rows (and plans the
// recursive hierarchy queries and the searches with scans several times
// slower than their index plans), and the count of a search, though it
// reads only the index, visits every row it counts in the table to see
// whether it is visible (a count 30 times slower). On MySQL it just runs
// load.
func (d *DB) BulkLoad(ctx context.Context, table string, load func() error) error {
	i := slices.IndexFunc(ent.ResourceTables(), func(c ent.ResourceTable) bool { return c.Table == table })
	if i < 0 {
		return fmt.Errorf("bulk load: no resource table %q", table)
	}
	var sides []string
	for _, col := range ent.ResourceTables()[i].Search {
		sides = append(sides, SubstringTable(table, col))
	}
	switch {
	case d.Postgres():
		if err := load(); err != nil {
			return err
		}
		for _, name := range append([]string{table}, sides...) {
			if _, err := d.Write().ExecContext(ctx, d.SQL().Raw("VACUUM ANALYZE ").Ident(name).String()); err != nil {
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
		for _, side := range sides {
			if _, err := w.ExecContext(ctx, d.SQL().Raw("DROP INDEX IF EXISTS ").Ident(shortName(side+"_gram")).String()); err != nil {
				return err
			}
		}
		loadErr := load()
		for _, side := range sides {
			if _, err := w.ExecContext(context.WithoutCancel(ctx), d.gramIndex(side)); err != nil {
				return errors.Join(loadErr, fmt.Errorf("making the index on gram of %s again: %w", side, err))
			}
		}
		return loadErr
	}
	return load()
}
