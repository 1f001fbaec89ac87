package db

import (
	"context"
	"errors"
	"fmt"

	"personnel/record"
)

// bulkIndex is an index a bulk load into an empty table drops first and
// makes again at its end, by sorting its rows once: inserted one by one at
// random places they took most of a load's time, and on MariaDB a large
// load slowed to a crawl once those indexes outgrew the buffer pool
// (BENCHMARKS.md, "Seeding and storage"). It must be
// exactly the index the migration steps made (a test compares a loaded
// database's schema with a migrated one's).
type bulkIndex struct {
	table, name string
	columns     []string
}

// bulkIndexer is a keeper with such an index.
type bulkIndexer interface{ bulkIndex() bulkIndex }

// Load inserts rows (their ids are set here) in one transaction, through
// the table's keepers as every write is; the caller vouches for them (the
// depth of a hierarchy, in particular, is not checked row by row), but
// the database still checks the unique code and the foreign keys. On
// PostgreSQL it streams the rows with COPY.
func (t *Table) Load(ctx context.Context, rows []record.Row) error {
	if t.db.Postgres() {
		return t.db.InCopyTx(ctx, func(tx *CopyTx) error { return t.insert(ctx, t.newWrite(tx, true), rows) })
	}
	return t.db.InTx(Alone(ctx), func(tx Tx) error { return t.insert(ctx, t.newWrite(tx, true), rows) })
}

// BulkLoad runs load, which loads many records into the table (calling
// Load). Into an empty table it drops the keepers' bulk indexes first and
// makes them again at the end (also when load fails, and at the next start
// should this process not get there). On SQLite the writer keeps its
// temporary storage in files meanwhile, not in memory (and its page cache
// at its usual size): in memory, what a load keeps there (the sorts that
// make the indexes again, the journals of its large statements) grew with
// what it loaded, to several times its size (BENCHMARKS.md, "Seeding and
// storage"), and in files, through the operating system's cache, it is no
// slower. On PostgreSQL it vacuums and analyzes what was written, as
// autovacuum would some time later: until then the planner knows nothing
// of the new rows, and index-only scans, which deep pages and counts rely
// on, visit the table for every entry whose page is not yet marked
// all-visible.
func (t *Table) BulkLoad(ctx context.Context, load func() error) error {
	d := t.db
	if d.SQLite() {
		w := d.write
		if _, err := w.ExecContext(ctx, "PRAGMA temp_store = FILE"); err != nil {
			return err
		}
		// Back to what openSQLite set, for the savepoints of group commit.
		defer w.ExecContext(context.WithoutCancel(ctx), "PRAGMA temp_store = MEMORY")
	}
	var held int
	err := scanOne(EntTx{d.write}.Query(ctx, d.Render("SELECT COUNT(*) FROM (SELECT 1 AS one FROM {table} LIMIT 1) AS t", Names{"table": t.Name})))(&held)
	if err != nil {
		return err
	}
	var indexes []bulkIndex
	for _, k := range t.keepers {
		if b, ok := k.(bulkIndexer); ok {
			indexes = append(indexes, b.bulkIndex())
		}
	}
	if held == 0 {
		for _, ix := range indexes {
			if err := d.dropIndex(ctx, ix); err != nil {
				return err
			}
		}
	}
	err = load()
	if held == 0 {
		// Made again even when the load failed.
		for _, ix := range indexes {
			if ierr := d.addIndex(context.WithoutCancel(ctx), ix); ierr != nil {
				return errors.Join(err, fmt.Errorf("making the index %s again: %w", ix.name, ierr))
			}
		}
	}
	if err != nil || !d.Postgres() {
		return err
	}
	vacuum := []string{t.Name}
	for _, ix := range indexes {
		vacuum = append(vacuum, ix.table)
	}
	for _, name := range vacuum {
		if _, err := d.write.ExecContext(ctx, "VACUUM ANALYZE "+d.Quote(name)); err != nil {
			return err
		}
	}
	return nil
}

// RestoreIndexes makes again every bulk index a load dropped and did not
// get to make again (the process stopped meanwhile).
func (d *DB) RestoreIndexes(ctx context.Context) error {
	for _, t := range d.Tables() {
		for _, k := range t.keepers {
			if b, ok := k.(bulkIndexer); ok {
				if err := d.addIndex(ctx, b.bulkIndex()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hasIndex reports whether the index of ix exists.
func (d *DB) hasIndex(ctx context.Context, ix bulkIndex) (bool, error) {
	var query string
	switch {
	case d.SQLite():
		query = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?"
	case d.Postgres():
		query = "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 AND indexname = $2"
	default:
		query = "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?"
	}
	var n int
	err := scanOne(EntTx{d.write}.Query(ctx, query, ix.table, ix.name))(&n)
	return n > 0, err
}

// dropIndex drops the index of ix, if it is there. Until it is made again,
// what it served is read by a scan: slower, and the same answers.
func (d *DB) dropIndex(ctx context.Context, ix bulkIndex) error {
	if has, err := d.hasIndex(ctx, ix); err != nil || !has {
		return err
	}
	stmt := "DROP INDEX " + d.Quote(ix.name)
	if d.MySQL() {
		stmt += " ON " + d.Quote(ix.table)
	}
	_, err := d.write.ExecContext(ctx, stmt)
	return err
}

// addIndex makes the index of ix when it is missing (looked for first: on
// PostgreSQL even CREATE INDEX IF NOT EXISTS takes a lock that holds
// writes back, and MySQL has no IF NOT EXISTS for it).
func (d *DB) addIndex(ctx context.Context, ix bulkIndex) error {
	if has, err := d.hasIndex(ctx, ix); err != nil || has {
		return err
	}
	cols := ""
	for i, c := range ix.columns {
		if i > 0 {
			cols += ", "
		}
		cols += d.Quote(c)
	}
	create := "CREATE INDEX " + d.Quote(ix.name) + " ON " + d.Quote(ix.table) + " (" + cols + ")"
	if !d.Postgres() {
		_, err := d.write.ExecContext(ctx, create)
		return err
	}
	// Building the index of a large load takes longer than any request's
	// statement_timeout, which the pool's connections carry.
	tx, err := d.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}
