package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"personnel/ent"
)

// BulkLoad runs load, which inserts many records into table. Into an empty
// table it drops the indexes on gram of the table's substring indexes, and
// the index on ancestor of its closure, and makes them again at the end,
// by sorting their rows once: inserted one by one at random places they
// took most of a load's time, and on MariaDB with its default 128 MiB
// buffer pool the load of a million records slowed to a few hundred a
// second as those indexes outgrew the pool. (A table that already holds
// records keeps them: searches and subtrees of its records meanwhile
// would scan the substring index or the closure.) On SQLite it gives the
// writer a large page cache meanwhile. On PostgreSQL it vacuums and
// analyzes the table, its substring indexes and its closure afterwards,
// as autovacuum would some time later: until then the planner knows
// nothing of the new rows (it planned the recursive hierarchy queries and
// the searches with scans several times slower than their index plans),
// and index-only scans, which deep pages, counts and a search's count rely
// on, visit the table for every entry whose page is not yet marked
// all-visible (a deep page at 1,000,000 records took 14 ms instead of
// 6.6 ms, a search's count 30 times as long).
func (d *DB) BulkLoad(ctx context.Context, table string, load func() error) error {
	i := slices.IndexFunc(ent.ResourceTables(), func(c ent.ResourceTable) bool { return c.Table == table })
	if i < 0 {
		return fmt.Errorf("bulk load: no resource table %q", table)
	}
	var sides []string
	for _, col := range ent.ResourceTables()[i].Search {
		sides = append(sides, SubstringTable(table, col))
	}
	if d.SQLite() {
		w := d.Write()
		if _, err := w.ExecContext(ctx, "PRAGMA cache_size = -65536"); err != nil {
			return err
		}
		defer w.ExecContext(context.WithoutCancel(ctx), "PRAGMA cache_size = -2000")
	}
	var held int
	err := QueryRow(ctx, d.write, d.SQL().Raw("SELECT COUNT(*) FROM (SELECT 1 AS ").Ident("one").Raw(" FROM ").Ident(table).
		Raw(" LIMIT 1) AS ").Ident("t").String(), nil, &held)
	if err != nil {
		return err
	}
	var closure string
	if ent.ResourceTables()[i].Parent != "" {
		closure = ClosureTable(table)
	}
	if held == 0 {
		for _, side := range sides {
			if err := d.dropGramIndex(ctx, side); err != nil {
				return err
			}
		}
		if closure != "" {
			if err := d.dropClosureIndex(ctx, closure); err != nil {
				return err
			}
		}
	}
	err = load()
	// Made again even when the load failed, and checked at every start
	// should this process not get here.
	for _, side := range sides {
		if ierr := d.addGramIndex(context.WithoutCancel(ctx), side); ierr != nil {
			return errors.Join(err, fmt.Errorf("making the index on gram of %s: %w", side, ierr))
		}
	}
	if closure != "" {
		if ierr := d.addClosureIndex(context.WithoutCancel(ctx), closure); ierr != nil {
			return errors.Join(err, fmt.Errorf("making the index on ancestor of %s: %w", closure, ierr))
		}
	}
	if err != nil || !d.Postgres() {
		return err
	}
	vacuum := append([]string{table}, sides...)
	if closure != "" {
		vacuum = append(vacuum, closure)
	}
	for _, name := range vacuum {
		if _, err := d.Write().ExecContext(ctx, d.SQL().Raw("VACUUM ANALYZE ").Ident(name).String()); err != nil {
			return err
		}
	}
	return nil
}
