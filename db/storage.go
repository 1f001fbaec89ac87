package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	atlas "ariga.io/atlas/sql/schema"
	"entgo.io/ent/dialect"
)

// What the store takes on disk, per resource and per structure kept beside
// it, as the database itself reports it: the bytes of each table with its
// indexes (SQLite's pages from dbstat; MySQL's data and index length after
// ANALYZE TABLE; PostgreSQL's total relation size, TOAST included). An
// operator sizes a disk, and chooses `search: index` or `scan` for a field,
// from these (`personnel storage`).

// Part is a resource table or a structure, and the space its tables take.
type Part struct {
	Name   string   // "table", or the structure's name (personnel_derived's)
	Tables []string // the tables it holds
	Bytes  int64
}

// Footprint is the space one resource takes.
type Footprint struct {
	Resource string // the resource's table
	Records  int
	Parts    []Part // the table first, then each structure
}

// Storage is the space the store's resources and shared records take.
type Storage struct {
	Resources []Footprint
	// Audit and Feed are the audit trail's and the change feed's tables,
	// shared by every resource, with how many entries each holds.
	Audit, Feed               Part
	AuditEntries, FeedEntries int
}

// tableBytesSQL lists every table of the schema with its bytes, indexes
// included, on each database.
var tableBytesSQL = map[string]string{
	dialect.SQLite: `SELECT s.tbl_name, SUM(d.pgsize) FROM dbstat AS d JOIN sqlite_schema AS s ON s.name = d.name GROUP BY s.tbl_name`,
	dialect.MySQL: `SELECT table_name, data_length + index_length FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'`,
	dialect.Postgres: `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c
		JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`,
}

// Storage measures the space of every registered resource, each
// structure kept beside it, the audit trail and the change feed. On MySQL
// it analyzes those tables first, so that their sizes are current.
func (d *DB) Storage(ctx context.Context) (Storage, error) {
	var out Storage
	var all []string
	for _, t := range d.Tables() {
		f := Footprint{Resource: t.Name, Parts: []Part{{Name: "table", Tables: []string{t.Name}}}}
		for _, st := range SideTables(d.Dialect, t.Res, atlas.NewTable(t.Name).AddColumns(atlas.NewIntColumn("id", "bigint"))) {
			i := slices.IndexFunc(f.Parts, func(p Part) bool { return p.Name == st.Structure })
			if i < 0 {
				f.Parts = append(f.Parts, Part{Name: st.Structure})
				i = len(f.Parts) - 1
			}
			f.Parts[i].Tables = append(f.Parts[i].Tables, st.Table.Name)
		}
		for _, p := range f.Parts {
			all = append(all, p.Tables...)
		}
		out.Resources = append(out.Resources, f)
	}
	out.Audit = Part{Name: "audit", Tables: []string{AuditTable}}
	out.Feed = Part{Name: "feed", Tables: []string{FeedTable}}
	all = append(all, AuditTable, FeedTable)
	if d.MySQL() {
		if err := d.analyze(ctx, all); err != nil {
			return Storage{}, err
		}
	}
	bytes, err := d.tableBytes(ctx)
	if err != nil {
		return Storage{}, err
	}
	sum := func(p *Part) error {
		for _, t := range p.Tables {
			n, ok := bytes[t]
			if !ok {
				return fmt.Errorf("measuring the tables: the database reports no size for %s", t)
			}
			p.Bytes += n
		}
		return nil
	}
	for i := range out.Resources {
		f := &out.Resources[i]
		for j := range f.Parts {
			if err := sum(&f.Parts[j]); err != nil {
				return Storage{}, err
			}
		}
		if f.Records, err = d.rows(ctx, f.Resource); err != nil {
			return Storage{}, err
		}
	}
	if err := errors.Join(sum(&out.Audit), sum(&out.Feed)); err != nil {
		return Storage{}, err
	}
	if out.AuditEntries, err = d.rows(ctx, AuditTable); err != nil {
		return Storage{}, err
	}
	if out.FeedEntries, err = d.rows(ctx, FeedTable); err != nil {
		return Storage{}, err
	}
	return out, nil
}

// tableBytes returns the bytes of every table of the schema, by name.
func (d *DB) tableBytes(ctx context.Context) (map[string]int64, error) {
	rows, err := d.Reader().Query(ctx, tableBytesSQL[d.Dialect])
	if err != nil {
		return nil, fmt.Errorf("measuring the tables: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

// analyze has MySQL measure tables again: its sizes are estimates kept
// with the statistics, which lag behind a bulk load.
func (d *DB) analyze(ctx context.Context, tables []string) error {
	for _, t := range tables {
		// ANALYZE TABLE answers with a result set, one row per table.
		rows, err := d.Reader().Query(ctx, "ANALYZE TABLE "+d.Quote(t))
		if err != nil {
			return fmt.Errorf("analyzing %s: %w", t, err)
		}
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("analyzing %s: %w", t, err)
		}
	}
	return nil
}

// rows counts the rows of a table.
func (d *DB) rows(ctx context.Context, table string) (int, error) {
	var n int
	err := QueryRow(ctx, d.Reader(), d.Render("SELECT COUNT(*) FROM {t}", Names{"t": table}), nil, &n)
	return n, err
}
