package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"

	"personnel/ent"
)

// The substring index of a searched column (a folded code, name or string
// extra with an icontains filter) is a side table of the resource table,
// the same on every backend (no extension, privilege or full-text engine:
// MariaDB has no n-gram parser, TiDB neither triggers nor FULLTEXT):
//
//	<table>_<column>_substr (id, gram, lcp), PRIMARY KEY (id, gram),
//	index (gram, lcp[, id]), id REFERENCES <table>(id) ON DELETE CASCADE
//
// Its rows for a record holding the folded value v are the distinct
// substrings of v that start at each of its characters and run for
// SubstringK characters (shorter at the end), in byte order, which is code
// point order and the order of the binary collations every backend
// compares with; lcp is how many characters a gram shares as a prefix
// with the one before it in that order (0 for the first).
//
// The records whose value contains a search q of 1 to SubstringK
// characters are then exactly those with a gram in [q, succ(q)) (the grams
// that begin with q) whose lcp is less than q's length, and each has one
// such row: the first of its grams that begin with q, since the grams
// before it do not begin with q and those after it share q with the gram
// before them. So the count of a search is COUNT(*) over one range of an
// index, with no DISTINCT, and costs what it matches, not what the table
// holds; one and two characters (common in Chinese, Japanese and Korean
// names) are served like longer searches. Comparisons are plain, so '%',
// '_' and '\' are characters like any other. A longer search is looked up
// by its first SubstringK characters and checked against the column.
//
// The store keeps the rows in the transaction of each write (db.Execer):
// a create inserts the record's grams, an update that changes the value
// replaces them, and a delete, by anyone, takes them with it (the cascade).

// SubstringK is the most characters a gram holds: searches up to this long
// are answered by the index alone.
const SubstringK = 16

// Gram is one row of a record in a substring index.
type Gram struct {
	Text string
	LCP  int // characters shared with the gram before it
}

// Grams returns the rows of a record holding the folded value v, in the
// index's order.
func Grams(v string) []Gram {
	starts := make([]int, 0, len(v)+1)
	for i := range v {
		starts = append(starts, i)
	}
	n := len(starts)
	starts = append(starts, len(v))
	texts := make([]string, n)
	for i := range n {
		texts[i] = v[starts[i]:starts[min(i+SubstringK, n)]]
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)
	grams := make([]Gram, len(texts))
	for i, t := range texts {
		grams[i].Text = t
		if i > 0 {
			grams[i].LCP = commonRunes(texts[i-1], t)
		}
	}
	return grams
}

// commonRunes counts the characters a and b begin with alike.
func commonRunes(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb || sa != sb {
			break
		}
		a, b, n = a[sa:], b[sb:], n+1
	}
	return n
}

// SubstringStructure names the substring index of a folded column among
// its table's derived structures.
func SubstringStructure(column string) string { return "substring:" + column }

// SubstringTable names the substring index of column in table.
func SubstringTable(table, column string) string { return shortName(table + "_" + column + "_substr") }

// shortName keeps a name within 63 bytes (PostgreSQL's limit, one below
// MySQL's), ending a longer one with a hash of the whole: a name cut short
// silently would make two long names alike.
func shortName(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:63-17] + "_" + hex.EncodeToString(sum[:8])
}

// Substring is a search of a folded column through its substring index.
type Substring struct {
	table   string
	lo, hi  string
	bounded bool // false: no gram is too large (lo is all U+10FFFF)
	under   int  // the lcp of the one row per record is below this
	exact   bool // the index alone answers; else it gives candidates
}

// NewSubstring returns the search of the folded value q (valid UTF-8, not
// empty) in the substring index of column in table.
func NewSubstring(table, column, q string) Substring {
	s := Substring{table: SubstringTable(table, column)}
	prefix := []rune(q)
	if len(prefix) > SubstringK {
		prefix = prefix[:SubstringK]
	}
	s.lo, s.under, s.exact = string(prefix), len(prefix), utf8.RuneCountInString(q) <= SubstringK
	// succ: the last character replaced by the next one, or dropped when
	// it is the last of Unicode and the one before it incremented.
	for i := len(prefix) - 1; i >= 0; i-- {
		next := prefix[i] + 1
		if next == 0xD800 { // surrogates are not characters
			next = 0xE000
		}
		if next <= utf8.MaxRune {
			prefix[i] = next
			s.hi, s.bounded = string(prefix[:i+1]), true
			break
		}
	}
	return s
}

// Key names the search among the searches of its table, for what is kept
// of it (its count).
func (s Substring) Key() string {
	return fmt.Sprintf("%q %q %q %t %d %t", s.table, s.lo, s.hi, s.bounded, s.under, s.exact)
}

// Exact reports whether the index alone answers the search; otherwise the
// records it finds are candidates, to be checked against the column.
func (s Substring) Exact() bool { return s.exact }

// From writes the index and the condition that selects one row per
// record found ("<index> AS <alias> WHERE ..."), for COUNT(*), the ids
// in order, or an IN (SELECT ...).
func (s Substring) From(q *SQL, alias string) *SQL {
	q.Ident(s.table).Raw(" AS ").Ident(alias).Raw(" WHERE ").Col(alias, "gram").Raw(" >= ").Arg(s.lo)
	if s.bounded {
		q.Raw(" AND ").Col(alias, "gram").Raw(" < ").Arg(s.hi)
	}
	return q.Raw(" AND ").Col(alias, "lcp").Raw(" < ").Arg(s.under)
}

// Folded is a record's folded value of one column.
type Folded struct {
	ID    int
	Value string
}

// substringBatch bounds the rows of one multi-row insert: on MySQL well
// within max_allowed_packet, on SQLite within its limit on parameters.
const substringBatch = 2048

// AddSubstrings inserts the substring index rows of records into the index
// of column in table, in tx (the transaction of the write that stored
// them). The records must have no rows there yet. On PostgreSQL one
// statement takes every row of any number of records, as arrays (unnest),
// so it has one text whatever the count and is prepared once; in a bulk
// load's transaction (CopyTx) the rows are streamed with COPY. On MySQL
// (whose driver sends the values in the text, preparing nothing) a
// multi-row insert takes up to substringBatch rows. On SQLite, which
// prepares and keeps each text, the inserts take a power of two of rows
// each, so that a record's few rows cost a few statements of a dozen
// shapes at most, not a statement of a new shape for every length.
func (d *DB) AddSubstrings(ctx context.Context, tx Execer, table, column string, records []Folded) error {
	var ids []int64
	var texts []string
	var lcps []int16
	for _, r := range records {
		for _, g := range Grams(r.Value) {
			ids, texts, lcps = append(ids, int64(r.ID)), append(texts, g.Text), append(lcps, int16(g.LCP))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	side := SubstringTable(table, column)
	if c, ok := tx.(*CopyTx); ok {
		// A bulk load on PostgreSQL streams the rows, as it streams the
		// records.
		rows := make([][]any, len(ids))
		for i := range ids {
			rows[i] = []any{ids[i], texts[i], lcps[i]}
		}
		_, err := c.CopyFrom(ctx, side, []string{"id", "gram", "lcp"}, rows)
		return err
	}
	head := d.SQL().Raw("INSERT INTO ").Ident(side).Raw(" (").Ident("id").Raw(", ").Ident("gram").Raw(", ").Ident("lcp").Raw(") ")
	if d.Postgres() {
		head.Raw("SELECT * FROM unnest(").Arg(ids).Raw("::bigint[], ").Arg(texts).Raw("::text[], ").Arg(lcps).Raw("::smallint[])")
		_, err := tx.ExecContext(ctx, head.String(), head.Args...)
		return err
	}
	head.Raw("VALUES ")
	for start := 0; start < len(ids); {
		n := min(len(ids)-start, substringBatch)
		if d.SQLite() {
			n = 1 << (bits.Len(uint(n)) - 1)
		}
		s := d.SQL().Raw(head.String())
		s.List(n, func(i int) {
			s.Raw("(").Arg(ids[start+i]).Raw(", ").Arg(texts[start+i]).Raw(", ").Arg(lcps[start+i]).Raw(")")
		})
		if _, err := tx.ExecContext(ctx, s.String(), s.Args...); err != nil {
			return err
		}
		start += n
	}
	return nil
}

// RemoveSubstrings deletes the substring index rows of the records ids
// from the index of column in table, in tx.
func (d *DB) RemoveSubstrings(ctx context.Context, tx Execer, table, column string, ids ...int) error {
	if len(ids) == 0 {
		return nil
	}
	s := d.SQL().Raw("DELETE FROM ").Ident(SubstringTable(table, column)).Raw(" WHERE ").Ident("id")
	if len(ids) == 1 {
		s.Raw(" = ").Arg(ids[0])
	} else {
		s.Raw(" IN (").List(len(ids), func(i int) { s.Arg(ids[i]) }).Raw(")")
	}
	_, err := tx.ExecContext(ctx, s.String(), s.Args...)
	return err
}

// substringKind is the derived structure of substring indexes: one for
// each searched column of a resource table.
var substringKind = &structureKind{
	of: func(t ent.ResourceTable) []Structure {
		var ss []Structure
		for _, col := range t.Search {
			ss = append(ss, Structure{Name: SubstringStructure(col), Column: col})
		}
		return ss
	},
	create:  createSubstrings,
	rebuild: rebuildSubstrings,
}

// createSubstrings creates the index of s when it is missing, and reports
// whether it was. Its index on gram is made whenever it is missing: after
// the table, and again after a bulk load into an empty table, which drops
// it meanwhile (BulkLoad), or at the next start when such a load was
// interrupted.
func createSubstrings(ctx context.Context, d *DB, s Structure) (bool, error) {
	side := SubstringTable(s.Table.Table, s.Column)
	exists, err := d.exists(ctx, side, "")
	if err != nil {
		return false, err
	}
	if !exists {
		// The same table everywhere, in each database's types: gram
		// compares by code point (BINARY, "C", the binary collation of
		// every table on MySQL).
		idType, gramType, lcpType, options := "BIGINT", "VARCHAR(16)", "SMALLINT", ""
		switch {
		case d.SQLite():
			idType, gramType, lcpType, options = "INTEGER", "TEXT COLLATE BINARY", "INTEGER", " WITHOUT ROWID"
		case d.Postgres():
			gramType = `VARCHAR(16) COLLATE "C"`
		default:
			coll, err := d.binaryCollation()
			if err != nil {
				return false, err
			}
			options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=" + coll
		}
		table := d.SQL().Raw("CREATE TABLE ").Ident(side).Raw(" (").Ident("id").Raw(" " + idType + " NOT NULL, ").
			Ident("gram").Raw(" " + gramType + " NOT NULL, ").Ident("lcp").Raw(" " + lcpType + " NOT NULL, ").
			Raw("PRIMARY KEY (").Ident("id").Raw(", ").Ident("gram").Raw("), CONSTRAINT ").Ident(shortName(side + "_fk")).
			Raw(" FOREIGN KEY (").Ident("id").Raw(") REFERENCES ").Ident(s.Table.Table).Raw(" (").Ident(s.Table.ID).
			Raw(") ON DELETE CASCADE)" + options)
		if _, err := d.write.ExecContext(ctx, table.String()); err != nil {
			return false, fmt.Errorf("%s: %w", table.String(), err)
		}
	}
	return !exists, d.addGramIndex(ctx, side)
}

// dropFullTextIndexes drops what earlier versions searched with, which
// the substring indexes replace and which would otherwise go on costing
// every write: on SQLite the FTS5 trigram index of each resource table and
// the triggers that kept it, on PostgreSQL the pg_trgm GIN index of each
// searched column (looked for first: DROP INDEX takes a lock that holds
// writes back even when there is nothing to drop). The pg_trgm extension
// itself is left to whoever created it.
func (d *DB) dropFullTextIndexes(ctx context.Context) error {
	for _, t := range ent.ResourceTables() {
		var stmts []string
		switch {
		case d.SQLite():
			fts := t.Table + "_search"
			for _, trigger := range []string{"_insert", "_delete", "_update"} {
				stmts = append(stmts, "DROP TRIGGER IF EXISTS "+q(fts+trigger))
			}
			stmts = append(stmts, "DROP TABLE IF EXISTS "+q(fts))
		case d.Postgres():
			for _, col := range t.Search {
				name := shortName(t.Table + "_" + col + "_trgm")
				var n int
				if err := QueryRow(ctx, d.write, "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1", []any{name}, &n); err != nil {
					return err
				}
				if n > 0 {
					stmts = append(stmts, d.SQL().Raw("DROP INDEX IF EXISTS ").Ident(name).String())
				}
			}
		}
		for _, stmt := range stmts {
			if _, err := d.write.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
	}
	return nil
}

// exists reports whether the table exists, or with index set, whether
// that index of the table does.
func (d *DB) exists(ctx context.Context, table, index string) (bool, error) {
	var query string
	args := []any{table}
	if index != "" {
		args = append(args, index)
	}
	switch {
	case d.SQLite() && index == "":
		query = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	case d.SQLite():
		query = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?"
	case d.Postgres() && index == "":
		query = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1"
	case d.Postgres():
		query = "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 AND indexname = $2"
	case index == "":
		query = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	default:
		query = "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?"
	}
	var n int
	err := QueryRow(ctx, d.write, query, args, &n)
	return n > 0, err
}

// addGramIndex makes the index on gram of the substring index side when
// it is missing (looked for first: on PostgreSQL even CREATE INDEX IF NOT
// EXISTS takes a lock that holds writes back, and MySQL has no IF NOT
// EXISTS for it). An index built at once over many rows is built by
// sorting them, far faster than the same rows inserted one by one.
func (d *DB) addGramIndex(ctx context.Context, side string) error {
	if has, err := d.exists(ctx, side, shortName(side+"_gram")); err != nil || has {
		return err
	}
	name := shortName(side + "_gram")
	s := d.SQL()
	if d.MySQL() {
		s.Raw("ALTER TABLE ").Ident(side).Raw(" ADD KEY ").Ident(name).Raw(" (").Ident("gram").Raw(", ").Ident("lcp").Raw(")")
	} else {
		s.Raw("CREATE INDEX ").Ident(name).Raw(" ON ").Ident(side).Raw(" (").Ident("gram").Raw(", ").Ident("lcp").Raw(", ").Ident("id").Raw(")")
	}
	_, err := d.write.ExecContext(ctx, s.String())
	return err
}

// dropGramIndex drops the index on gram of the substring index side, if
// it is there.
func (d *DB) dropGramIndex(ctx context.Context, side string) error {
	if has, err := d.exists(ctx, side, shortName(side+"_gram")); err != nil || !has {
		return err
	}
	s := d.SQL()
	if d.MySQL() {
		s.Raw("ALTER TABLE ").Ident(side).Raw(" DROP KEY ").Ident(shortName(side + "_gram"))
	} else {
		s.Raw("DROP INDEX ").Ident(shortName(side + "_gram"))
	}
	_, err := d.write.ExecContext(ctx, s.String())
	return err
}

// rebuildBatch is how many records one transaction of a rebuild takes.
const rebuildBatch = 1000

// rebuildSubstrings makes the index of s whole, in id order, a batch of
// records per transaction. Each batch locks its records (a write of this
// version to one of them waits, and one that ran first is seen), replaces
// their rows, and commits. Only the rows of the records read are deleted:
// on PostgreSQL a record created meanwhile with an id inside the batch's
// range was not read, and keeps the rows its own write added. A record
// deleted meanwhile takes its rows with it.
func rebuildSubstrings(ctx context.Context, d *DB, s Structure) (int, error) {
	sel := d.SQL().Raw("SELECT ").Ident(s.Table.ID).Raw(", ").Ident(s.Column).Raw(" FROM ").Ident(s.Table.Table).
		Raw(" WHERE ").Ident(s.Table.ID).Raw(" > ").Param().Raw(" ORDER BY ").Ident(s.Table.ID).
		Raw(" LIMIT ").Param().Raw(d.Locks().Update).String()
	total, after := 0, 0
	for {
		var records []Folded
		err := d.InTx(ctx, func(tx *ent.Client) error {
			records = records[:0]
			rows, err := tx.QueryContext(ctx, sel, after, rebuildBatch)
			if err != nil {
				return err
			}
			var ids []int
			for rows.Next() {
				var f Folded
				var v *string
				if err := rows.Scan(&f.ID, &v); err != nil {
					rows.Close()
					return err
				}
				if v != nil {
					f.Value = *v
				}
				records, ids = append(records, f), append(ids, f.ID)
			}
			// A lock the rows could not get (a deadlock, a timeout) ends
			// the rows with an error, which Close does not return.
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			if err := d.RemoveSubstrings(ctx, tx, s.Table.Table, s.Column, ids...); err != nil {
				return err
			}
			return d.AddSubstrings(ctx, tx, s.Table.Table, s.Column, records)
		})
		if err != nil {
			return total, err
		}
		if len(records) == 0 {
			return total, nil
		}
		total += len(records)
		after = records[len(records)-1].ID
	}
}

// CheckSubstrings compares every substring index with its table and
// returns an error naming the first record whose rows are not exactly the
// grams of its value: for tests, and the invariants the crash test checks.
func (d *DB) CheckSubstrings(ctx context.Context) error {
	for _, s := range Structures() {
		if s.kind != substringKind {
			continue
		}
		want := map[int][]Gram{}
		values := d.SQL().Raw("SELECT ").Ident(s.Table.ID).Raw(", ").Ident(s.Column).Raw(" FROM ").Ident(s.Table.Table)
		err := queryRows(ctx, d.read, values.String(), func(scan func(dest ...any) error) error {
			var id int
			var v *string
			if err := scan(&id, &v); err != nil {
				return err
			}
			want[id] = nil
			if v != nil {
				want[id] = Grams(*v)
			}
			return nil
		})
		if err != nil {
			return err
		}
		have := map[int][]Gram{}
		side := d.SQL().Raw("SELECT ").Ident("id").Raw(", ").Ident("gram").Raw(", ").Ident("lcp").Raw(" FROM ").
			Ident(SubstringTable(s.Table.Table, s.Column)).Raw(" ORDER BY ").Ident("id").Raw(", ").Ident("gram")
		err = queryRows(ctx, d.read, side.String(), func(scan func(dest ...any) error) error {
			var id int
			var g Gram
			if err := scan(&id, &g.Text, &g.LCP); err != nil {
				return err
			}
			have[id] = append(have[id], g)
			return nil
		})
		if err != nil {
			return err
		}
		for id, grams := range have {
			if _, ok := want[id]; !ok {
				return fmt.Errorf("%s of %s: rows of record %d, which does not exist", s.Name, s.Table.Table, id)
			}
			if !slices.Equal(grams, want[id]) {
				return fmt.Errorf("%s of %s: record %d has rows %v, want %v", s.Name, s.Table.Table, id, grams, want[id])
			}
		}
		for id, grams := range want {
			if _, ok := have[id]; !ok && len(grams) > 0 {
				return fmt.Errorf("%s of %s: record %d has no rows, want %v", s.Name, s.Table.Table, id, grams)
			}
		}
	}
	return nil
}

// queryRows runs query with args on c and calls row for each row it
// returns.
func queryRows(ctx context.Context, c *ent.Client, query string, row func(scan func(dest ...any) error) error, args ...any) error {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
