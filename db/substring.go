package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"personnel/casefold"
	"personnel/record"
)

// The substring index of a field searched with `search: index` (the code
// and name of the shipped resources) is a side table of the resource
// table, the same on every backend (no extension, privilege or full-text
// engine: MariaDB has no n-gram parser, TiDB neither triggers nor
// FULLTEXT):
//
//	<table>_<folded column>_substr (id, gram, lcp), PRIMARY KEY (id, gram),
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
// The keeper writes a record's rows when it is inserted, replaces them
// when the field changes, and a delete, by anyone, takes them with it
// (the cascade). A field searched with `search: scan` has no index: its
// searches are a LIKE over the folded column.

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

// substringGramIndex names the index on gram of the substring index side.
func substringGramIndex(side string) string { return shortName(side + "_gram") }

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

// substringBatch bounds the rows of one multi-row insert: on MySQL well
// within max_allowed_packet, on SQLite within its limit on parameters.
const substringBatch = 2048

// substringKeeper keeps the substring index of one field of a table.
type substringKeeper struct {
	t     *Table
	field int    // the field searched
	side  string // the index's table
	names Names

	insertPG, remove, values string
}

func newSubstringKeeper(t *Table, field int) *substringKeeper {
	f := &t.Fields.List[field]
	k := &substringKeeper{t: t, field: field, side: SubstringTable(t.Name, f.Fold)}
	k.names = Names{"side": k.side, "table": t.Name, "fold": f.Fold}
	d := t.db
	// PostgreSQL takes every row of any number of records in one
	// statement, as arrays, so it has one text whatever the count and is
	// prepared once.
	k.insertPG = d.Render("INSERT INTO {side} (id, gram, lcp) SELECT * FROM unnest(?::bigint[], ?::text[], ?::smallint[])", k.names)
	k.remove = d.Render("DELETE FROM {side} WHERE id = ?", k.names)
	k.values = d.Render("SELECT id, {fold} FROM {table} WHERE id > ? ORDER BY id LIMIT ?"+d.Locks().Update, k.names)
	return k
}

// Name implements Structure.
func (k *substringKeeper) Name() string { return SubstringStructure(k.t.Fields.List[k.field].Fold) }

// Inserted adds the rows of the new records.
func (k *substringKeeper) Inserted(ctx context.Context, w *Write, rows []record.Row) error {
	return k.add(ctx, w.Tx, rows)
}

// Updated replaces the rows of records whose field changed.
func (k *substringKeeper) Updated(ctx context.Context, w *Write, changes []Change) error {
	var rows []record.Row
	for _, c := range changes {
		if !slices.Contains(c.Changed, k.field) {
			continue
		}
		if err := execLater(ctx, w.Tx, k.remove, c.After.ID); err != nil {
			return err
		}
		rows = append(rows, c.After)
	}
	return k.add(ctx, w.Tx, rows)
}

// Deleting does nothing: the rows go with the record (ON DELETE CASCADE).
func (k *substringKeeper) Deleting(context.Context, *Write, []record.Row) error { return nil }

// add inserts the rows of records, which have none yet. On MySQL (whose
// driver sends the values in the text, preparing nothing) a multi-row
// insert takes up to substringBatch rows. On SQLite, which prepares and
// keeps each text, the inserts take a power of two of rows each, so that
// a record's few rows cost a few statements of a dozen shapes at most,
// not a statement of a new shape for every length.
func (k *substringKeeper) add(ctx context.Context, tx Tx, rows []record.Row) error {
	var ids []int64
	var texts []string
	var lcps []int16
	for _, r := range rows {
		v := r.Values[k.field]
		if !v.Valid || v.Str == "" {
			continue
		}
		for _, g := range Grams(casefold.Fold(v.Str)) {
			ids, texts, lcps = append(ids, int64(r.ID)), append(texts, g.Text), append(lcps, int16(g.LCP))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	d := k.t.db
	if c, ok := tx.(bulkInserter); ok {
		values := make([][]any, len(ids))
		for i := range ids {
			values[i] = []any{ids[i], texts[i], lcps[i]}
		}
		_, err := c.CopyFrom(ctx, k.side, []string{"id", "gram", "lcp"}, values)
		return err
	}
	if d.Postgres() {
		return execLater(ctx, tx, k.insertPG, ids, texts, lcps)
	}
	for start := 0; start < len(ids); {
		n := min(len(ids)-start, substringBatch)
		if d.SQLite() {
			n = 1 << (bits.Len(uint(n)) - 1)
		}
		args := make([]any, 0, 3*n)
		for i := start; i < start+n; i++ {
			args = append(args, ids[i], texts[i], lcps[i])
		}
		query := d.Render("INSERT INTO {side} (id, gram, lcp) VALUES "+Tuples(n, 3), k.names)
		if err := execLater(ctx, tx, query, args...); err != nil {
			return err
		}
		start += n
	}
	return nil
}

// rebuildBatch is how many records one transaction of a rebuild takes.
const rebuildBatch = 1000

// Rebuild makes the index whole, in id order, a batch of records per
// transaction. Each batch locks its records (a write to one of them
// waits, and one that ran first is seen), replaces their rows, and
// commits. Only the rows of the records read are deleted: on PostgreSQL a
// record created meanwhile with an id inside the batch's range was not
// read, and keeps the rows its own write added. A record deleted
// meanwhile takes its rows with it.
func (k *substringKeeper) Rebuild(ctx context.Context) (int, error) {
	d := k.t.db
	total, after := 0, 0
	for {
		var rows []record.Row
		err := d.InTx(ctx, func(tx Tx) error {
			rows = rows[:0]
			err := queryRows(ctx, tx, k.values, func(scan func(dest ...any) error) error {
				var id int
				var v *string
				if err := scan(&id, &v); err != nil {
					return err
				}
				r := record.Row{ID: id, Values: make([]record.Value, len(k.t.Fields.List))}
				if v != nil {
					// The folded value folds to itself.
					r.Values[k.field] = record.Value{Str: *v, Valid: true}
				}
				rows = append(rows, r)
				return nil
			}, after, rebuildBatch)
			if err != nil || len(rows) == 0 {
				return err
			}
			ids := make([]string, len(rows))
			args := make([]any, len(rows))
			for i, r := range rows {
				ids[i], args[i] = "?", r.ID
			}
			del := d.Render("DELETE FROM {side} WHERE id IN ("+strings.Join(ids, ", ")+")", k.names)
			if _, err := tx.ExecContext(ctx, del, args...); err != nil {
				return err
			}
			return k.add(ctx, tx, rows)
		})
		if err != nil {
			return total, err
		}
		if len(rows) == 0 {
			return total, nil
		}
		total += len(rows)
		after = rows[len(rows)-1].ID
	}
}

// Check compares the index with its table and returns an error naming the
// first record whose rows are not exactly the grams of its value.
func (k *substringKeeper) Check(ctx context.Context) error {
	d := k.t.db
	read := EntTx{d.read}
	want := map[int][]Gram{}
	err := queryRows(ctx, read, d.Render("SELECT id, {fold} FROM {table}", k.names), func(scan func(dest ...any) error) error {
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
	err = queryRows(ctx, read, d.Render("SELECT id, gram, lcp FROM {side} ORDER BY id, gram", k.names), func(scan func(dest ...any) error) error {
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
			return fmt.Errorf("%s of %s: rows of record %d, which does not exist", k.Name(), k.t.Name, id)
		}
		if !slices.Equal(grams, want[id]) {
			return fmt.Errorf("%s of %s: record %d has rows %v, want %v", k.Name(), k.t.Name, id, grams, want[id])
		}
	}
	for id, grams := range want {
		if _, ok := have[id]; !ok && len(grams) > 0 {
			return fmt.Errorf("%s of %s: record %d has no rows, want %v", k.Name(), k.t.Name, id, grams)
		}
	}
	return nil
}

// bulkIndex is the index a bulk load into an empty table drops and makes
// again at its end (BulkLoad): inserted one by one at random places its
// rows took most of a load's time.
func (k *substringKeeper) bulkIndex() bulkIndex {
	return bulkIndex{table: k.side, name: substringGramIndex(k.side), columns: []string{"gram", "lcp", "id"}}
}
