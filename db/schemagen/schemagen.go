// Package schemagen works out, without a database server, the next
// migration step of one database: the schema the code describes (the
// tables of the Ent schemas, converted by Ent as its own migrations
// convert them, and the tables each structure keeps beside a resource
// table) against the schema the last step left, kept as Atlas HCL beside
// the steps. Atlas's offline differ and planner write the statements.
package schemagen

import (
	"context"
	stdsql "database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/mysql"
	"ariga.io/atlas/sql/postgres"
	atlas "ariga.io/atlas/sql/schema"
	"ariga.io/atlas/sql/sqlite"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	entschema "entgo.io/ent/dialect/sql/schema"
	"github.com/zclconf/go-cty/cty"

	"personnel/config"
	"personnel/db"
)

// SnapshotFile holds, in each database's folder, the schema its last step
// left.
const SnapshotFile = "schema.hcl"

// Step is the next migration step of one database.
type Step struct {
	Version    int
	Statements []string // with their comments, each ending in ";"
	Created    []string // tables it creates
	snapshot   []byte   // the schema after it, as HCL
	dialect    string
}

// tools are Atlas's offline differ, planner and HCL codec of a database.
type tools struct {
	diff    atlas.Differ
	plan    migrate.PlanApplier
	marshal func(any) ([]byte, error)
	eval    func([]byte, any, map[string]cty.Value) error
}

func toolsOf(d string) tools {
	switch d {
	case dialect.MySQL:
		return tools{mysql.DefaultDiff, mysql.DefaultPlan, mysql.MarshalHCL.MarshalSpec, mysql.EvalHCLBytes}
	case dialect.Postgres:
		return tools{postgres.DefaultDiff, postgres.DefaultPlan, postgres.MarshalHCL.MarshalSpec, postgres.EvalHCLBytes}
	}
	return tools{sqlite.DefaultDiff, sqlite.DefaultPlan, sqlite.MarshalHCL.MarshalSpec, sqlite.EvalHCLBytes}
}

// schemaName is the name the snapshots give the schema; statements are
// written unqualified.
const schemaName = "main"

// Desired returns the schema the code describes for the Ent dialect d:
// the Ent tables and the side tables of every resource of rs.
func Desired(ctx context.Context, d string, tables []*entschema.Table, rs []config.Resource) (*atlas.Schema, error) {
	m, err := entschema.NewMigrate(versionDriver{d})
	if err != nil {
		return nil, err
	}
	realm, err := m.StateReader(tables...).ReadState(ctx)
	if err != nil {
		return nil, fmt.Errorf("converting the Ent schema: %w", err)
	}
	s := atlas.New(schemaName)
	for _, rs := range realm.Schemas {
		s.AddTables(rs.Tables...)
	}
	for _, r := range rs {
		resTable, ok := s.Table(r.Table)
		if !ok {
			return nil, fmt.Errorf("resource %s: no Ent table %s (run the whole `go generate ./...`)", r.Name, r.Table)
		}
		for _, st := range db.SideTables(d, r, resTable) {
			s.AddTables(st.Table)
		}
	}
	normalize(d, s)
	return s, nil
}

// normalize states what every database's tables share the same way on the
// side the code describes and on the snapshot's (whose HCL does not keep
// every attribute): on PostgreSQL every text column compares by code point
// ("C") and ids are identity columns BY DEFAULT; on MySQL a table with
// text is utf8mb4 in MariaDB's binary NO PAD collation (the runner names
// MySQL's and TiDB's instead), columns inherit it, and a table without
// text states none.
func normalize(d string, s *atlas.Schema) {
	s.Attrs = nil
	for _, t := range s.Tables {
		t.Schema = s
		text := false
		for _, c := range t.Columns {
			_, isText := c.Type.Type.(*atlas.StringType)
			if e, ok := c.Type.Type.(*atlas.EnumType); ok && e != nil {
				isText = true
			}
			text = text || isText
			switch d {
			case dialect.Postgres:
				for _, a := range c.Attrs {
					if id, ok := a.(*postgres.Identity); ok && id.Generation == "" {
						id.Generation = "BY DEFAULT"
					}
				}
				if isText {
					replaceAttr(&c.Attrs, &atlas.Collation{V: "C"})
				}
			case dialect.MySQL:
				removeAttrs(&c.Attrs, func(a atlas.Attr) bool {
					switch a.(type) {
					case *atlas.Charset, *atlas.Collation:
						return true
					}
					return false
				})
			}
		}
		if d == dialect.MySQL {
			removeAttrs(&t.Attrs, func(a atlas.Attr) bool {
				switch a.(type) {
				case *atlas.Charset, *atlas.Collation, *mysql.AutoIncrement:
					return true
				}
				return false
			})
			if text {
				t.Attrs = append(t.Attrs, &atlas.Charset{V: "utf8mb4"}, &atlas.Collation{V: "utf8mb4_nopad_bin"})
			}
		}
	}
	sort.Slice(s.Tables, func(i, j int) bool { return s.Tables[i].Name < s.Tables[j].Name })
}

func replaceAttr(attrs *[]atlas.Attr, a atlas.Attr) {
	removeAttrs(attrs, func(b atlas.Attr) bool { return fmt.Sprintf("%T", b) == fmt.Sprintf("%T", a) })
	*attrs = append(*attrs, a)
}

func removeAttrs(attrs *[]atlas.Attr, drop func(atlas.Attr) bool) {
	kept := (*attrs)[:0]
	for _, a := range *attrs {
		if !drop(a) {
			kept = append(kept, a)
		}
	}
	*attrs = kept
}

// Snapshot reads the schema the last step of dir left; none before the
// first step.
func Snapshot(d, dir string) (*atlas.Schema, error) {
	b, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if os.IsNotExist(err) {
		return atlas.New(schemaName), nil
	}
	if err != nil {
		return nil, err
	}
	var r atlas.Realm
	if err := toolsOf(d).eval(b, &r, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", SnapshotFile, err)
	}
	s := atlas.New(schemaName)
	for _, rs := range r.Schemas {
		s.AddTables(rs.Tables...)
	}
	normalize(d, s)
	return s, nil
}

// Plan works out step version of the Ent dialect d: what turns the
// snapshot in dir into the schema the code describes. A step with no
// statements changes nothing.
func Plan(ctx context.Context, d string, tables []*entschema.Table, rs []config.Resource, dir string, version int) (*Step, error) {
	want, err := Desired(ctx, d, tables, rs)
	if err != nil {
		return nil, err
	}
	have, err := Snapshot(d, dir)
	if err != nil {
		return nil, err
	}
	tl := toolsOf(d)
	changes, err := tl.diff.SchemaDiff(have, want)
	if err != nil {
		return nil, err
	}
	step := &Step{Version: version, dialect: d}
	if len(changes) == 0 {
		return step, nil
	}
	q := ""
	plan, err := tl.plan.PlanChanges(ctx, "step", changes, func(o *migrate.PlanOptions) { o.SchemaQualifier = &q })
	if err != nil {
		return nil, err
	}
	for _, c := range plan.Changes {
		stmt := c.Cmd + ";"
		if c.Comment != "" {
			stmt = "-- " + c.Comment + "\n" + stmt
		}
		step.Statements = append(step.Statements, stmt)
	}
	step.Statements = append(step.Statements, stateRows(d, rs, changes, version, &step.Created)...)
	if step.snapshot, err = tl.marshal(want); err != nil {
		return nil, err
	}
	return step, nil
}

// stateRows records the state of each structure a step creates or drops
// (db/trust.go): trusted when the step creates its resource table too, or
// the table is empty; untrusted, to be rebuilt, beside records already
// there. The change feed (db/feed.go), which has no table of its own per
// resource, is recorded with the feed's table or the resource's.
func stateRows(d string, rs []config.Resource, changes []atlas.Change, version int, created *[]string) []string {
	added, dropped := map[string]bool{}, map[string]bool{}
	for _, c := range changes {
		switch c := c.(type) {
		case *atlas.AddTable:
			added[c.T.Name] = true
			*created = append(*created, c.T.Name)
		case *atlas.DropTable:
			dropped[c.T.Name] = true
		}
	}
	sort.Strings(*created)
	q := func(name string) string {
		if d == dialect.Postgres {
			return `"` + name + `"`
		}
		return "`" + name + "`"
	}
	derived := q("personnel_derived")
	insert := func(table, structure string) string {
		trusted := "1"
		if !added[table] {
			trusted = "CASE WHEN EXISTS (SELECT 1 FROM " + q(table) + ") THEN 0 ELSE 1 END"
		}
		return fmt.Sprintf("-- record the state of %q of %q\nINSERT INTO %s (%s, %s, %s, %s) VALUES ('%s', '%s', %s, %d);",
			structure, table, derived, q("table_name"), q("structure"), q("trusted"), q("since"), table, structure, trusted, version)
	}
	remove := func(table, structure string) string {
		where := q("table_name") + " = '" + table + "'"
		if structure != "" {
			where += " AND " + q("structure") + " = '" + structure + "'"
		}
		return fmt.Sprintf("-- forget the state of %q of %q\nDELETE FROM %s WHERE %s;", structure, table, derived, where)
	}
	var out []string
	sides := map[string]bool{}
	for _, r := range rs {
		seen := map[string]bool{}
		for _, st := range db.SideTables(d, r, atlas.NewTable(r.Table).AddColumns(atlas.NewIntColumn("id", "bigint"))) {
			sides[st.Table.Name] = true
			if seen[st.Structure] {
				continue
			}
			switch {
			case added[st.Table.Name]:
				seen[st.Structure] = true
				out = append(out, insert(r.Table, st.Structure))
			case dropped[st.Table.Name]:
				seen[st.Structure] = true
				out = append(out, remove(r.Table, st.Structure))
			}
		}
		if added[db.FeedTable] || added[r.Table] {
			out = append(out, insert(r.Table, db.FeedStructure))
		}
	}
	var gone []string
	for name := range dropped {
		if !sides[name] && strings.HasPrefix(name, "personnel_") && !slices.Contains(alwaysDropped, name) {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		out = append(out, remove(name, ""))
	}
	return out
}

// alwaysDropped are tables a step dropped that were never resource
// tables.
var alwaysDropped = []string{"personnel_record_count"}

// Write writes the step into dir as name.sql, the new snapshot, and
// atlas.sum.
func (s *Step) Write(dir, name string) error {
	var b strings.Builder
	b.WriteString("-- Written by `go generate ./...` (cmd/migrationgen); do not edit. A step that moves data is a file of its own, written by hand.\n")
	if len(s.Statements) == 0 {
		b.WriteString("-- Nothing changes on this database.\n")
	}
	for _, st := range s.Statements {
		b.WriteString(st + "\n")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".sql"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if s.snapshot != nil {
		if err := os.WriteFile(filepath.Join(dir, SnapshotFile), s.snapshot, 0o644); err != nil {
			return err
		}
	}
	return WriteSum(dir)
}

// WriteSum writes the atlas.sum of the steps in dir.
func WriteSum(dir string) error {
	local, err := migrate.NewLocalDir(dir)
	if err != nil {
		return err
	}
	sum, err := local.Checksum()
	if err != nil {
		return err
	}
	return migrate.WriteSumFile(local, sum)
}

// versionDriver answers the questions Ent's schema conversion asks a
// database before it starts (its version, whether SQLite enforces foreign
// keys), so that it runs with none: the answers are those of the oldest
// server Personnel supports.
type versionDriver struct{ d string }

func (v versionDriver) Exec(context.Context, string, any, any) error { return nil }

func (v versionDriver) Query(_ context.Context, _ string, _, out any) error {
	rows, ok := out.(*entsql.Rows)
	if !ok {
		return fmt.Errorf("schemagen: unexpected query result %T", out)
	}
	var row []driver.Value
	switch v.d {
	case dialect.MySQL:
		row = []driver.Value{"version", "8.0.31"}
	case dialect.Postgres:
		row = []driver.Value{"150000"}
	default:
		row = []driver.Value{int64(1)}
	}
	*rows = entsql.Rows{ColumnScanner: &oneRow{row: row}}
	return nil
}

func (v versionDriver) Tx(context.Context) (dialect.Tx, error) {
	return nil, fmt.Errorf("schemagen: no transactions without a database")
}

func (v versionDriver) Close() error    { return nil }
func (v versionDriver) Dialect() string { return v.d }

// oneRow is a result of one row.
type oneRow struct {
	row  []driver.Value
	done bool
	read bool
}

func (r *oneRow) Close() error                               { return nil }
func (r *oneRow) ColumnTypes() ([]*stdsql.ColumnType, error) { return nil, nil }
func (r *oneRow) Columns() ([]string, error)                 { return make([]string, len(r.row)), nil }
func (r *oneRow) Err() error                                 { return nil }
func (r *oneRow) NextResultSet() bool                        { return false }

func (r *oneRow) Next() bool {
	if r.done {
		return false
	}
	r.done = true
	return true
}

func (r *oneRow) Scan(dest ...any) error {
	if r.read {
		return io.EOF
	}
	r.read = true
	for i, d := range dest {
		switch p := d.(type) {
		case *string:
			*p = fmt.Sprint(r.row[i])
		case *bool:
			*p = r.row[i] == int64(1)
		case *int64:
			*p = r.row[i].(int64)
		case *stdsql.NullBool:
			p.Bool, p.Valid = r.row[i] == int64(1), true
		default:
			return fmt.Errorf("schemagen: cannot scan into %T", d)
		}
	}
	return nil
}
