package db_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"personnel/casefold"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/record"
)

func TestGrams_EachStartOnceSortedWithTheSharedPrefix(t *testing.T) {
	long := "abcdefghijklmnopqrstu" // 21 characters: grams of 16, then shorter
	for _, tc := range []struct {
		value string
		want  []db.Gram
	}{
		{"", []db.Gram{}},
		{"a", []db.Gram{{"a", 0}}},
		{"banana", []db.Gram{{"a", 0}, {"ana", 1}, {"anana", 3}, {"banana", 0}, {"na", 0}, {"nana", 2}}},
		{"aaa", []db.Gram{{"a", 0}, {"aa", 1}, {"aaa", 2}}},
		// Characters, not bytes; byte order is code point order.
		{"äöä", []db.Gram{{"ä", 0}, {"äöä", 1}, {"öä", 0}}},
		{"営業部", []db.Gram{{"営業部", 0}, {"業部", 0}, {"部", 0}}},
		{"%_\\", []db.Gram{{"%_\\", 0}, {"\\", 0}, {"_\\", 0}}},
		{long, func() []db.Gram {
			var want []db.Gram
			for i := range len(long) {
				want = append(want, db.Gram{Text: long[i:min(i+db.SubstringK, len(long))]})
			}
			return want
		}()},
		// A repeated gram of 16 characters is one row.
		{strings.Repeat("ab", 10), []db.Gram{
			{"ab", 0}, {"abab", 2}, {"ababab", 4}, {"abababab", 6}, {"ababababab", 8}, {"abababababab", 10},
			{"ababababababab", 12}, {"abababababababab", 14},
			{"b", 0}, {"bab", 1}, {"babab", 3}, {"bababab", 5}, {"babababab", 7}, {"bababababab", 9},
			{"babababababab", 11}, {"bababababababab", 13}, {"babababababababa", 15},
		}},
	} {
		got := db.Grams(tc.value)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Grams(%q) =\n%v, want\n%v", tc.value, got, tc.want)
		}
	}
}

// insertNamed creates a record with code and name through the store's
// table, which keeps every structure beside it.
func insertNamed(t *testing.T, d *db.DB, code, name string) int {
	t.Helper()
	table := d.Table(res)
	row := record.Row{Values: table.Fields.Defaults()}
	row.Values[table.Fields.Code] = record.Value{Str: code, Valid: true}
	row.Values[table.Fields.Name] = record.Value{Str: name, Valid: true}
	err := d.InTx(context.Background(), func(tx db.Tx) error {
		rows := []record.Row{row}
		err := table.Insert(context.Background(), tx, rows)
		row.ID = rows[0].ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return row.ID
}

// indexed inserts records (code: name) with insertNamed.
func indexed(t *testing.T, d *db.DB, records map[string]string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for code, name := range records {
		ids[code] = insertNamed(t, d, code, name)
	}
	return ids
}

// found returns the ids the name index finds for the folded search q, in
// id order, as the store asks for them.
func found(t *testing.T, d *db.DB, q string) []int {
	t.Helper()
	s := d.SQL().Raw("SELECT ").Col("g", "id").Raw(" FROM ")
	db.NewSubstring(cols.Table, cols.NameFold, q).From(s, "g").Raw(" ORDER BY ").Col("g", "id")
	return column[int](t, d.Read(), s.String(), s.Args...)
}

// countFound counts what the name index finds for q, as the store counts.
func countFound(t *testing.T, d *db.DB, q string) int {
	t.Helper()
	s := d.SQL().Raw("SELECT COUNT(*) FROM ")
	db.NewSubstring(cols.Table, cols.NameFold, q).From(s, "g")
	var n int
	if err := queryOne(d.Reader(), s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The index finds each record whose value holds the search exactly once,
// and no other, on every backend: by the characters compared as code
// points, with no wildcard, at the edges of Unicode (the character before
// the surrogates, the last one) as in the middle. A search longer than
// the grams finds candidates, every record that holds it among them.
func TestSubstring_FindsEachRecordThatHoldsTheSearchOnce(t *testing.T) {
	names := []string{
		"banana", "Bandana", "ananas", "Ärzte Köln", "ÄRZTE", "straße", "100% Sales", "100 Sales", "a_b", "axb",
		`back\slash`, `say "hi"`, "営業部 東京", "総務部", "Σίσυφος", "отдел кадров", "محاسبة", "\U0010FFFF\U0010FFFFz",
		"\U0010FFFFa", "\uD7FFx", "\uE000y", "aaaaaaaaaaaaaaaaaaaaaaaa", "x", "ab ", "ab",
		"the quick brown fox jumps over the lazy dog",
	}
	searches := []string{
		"a", "an", "ana", "anana", "banana", "ärz", "ärzte köln", "%", "_", "a_b", `\`, `"`, "営", "営業", "部", "σ",
		"\U0010FFFF", "\U0010FFFF\U0010FFFF", "\uD7FF", "\uE000", "b ", "ab", "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaa",
		"quick brown fox jumps", "lazy", "zzz", "ß", "ss",
	}
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ids := map[int]string{}
			for i, name := range names {
				ids[insertNamed(t, d, fmt.Sprintf("C%02d", i), name)] = casefold.Fold(name)
			}
			for _, q := range searches {
				q = casefold.Fold(q)
				var want []int
				for id, v := range ids {
					if strings.Contains(v, q) {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				got := found(t, d, q)
				if len([]rune(q)) > db.SubstringK {
					if !db.NewSubstring(cols.Table, cols.NameFold, q).Exact() {
						for _, id := range want {
							if !slices.Contains(got, id) {
								t.Errorf("search %q: candidates %v lack %d", q, got, id)
							}
						}
						continue
					}
					t.Errorf("search %q of %d characters is exact", q, len([]rune(q)))
				}
				if !slices.Equal(got, want) {
					t.Errorf("search %q finds %v, want %v", q, got, want)
				}
				if n := countFound(t, d, q); n != len(want) {
					t.Errorf("search %q counts %d, want %d", q, n, len(want))
				}
			}
		})
	}
}

// Deleting a record, by anyone, takes its rows with it.
func TestSubstring_DeletingARecordTakesItsRows(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ids := indexed(t, d, map[string]string{"K1": "keep me", "K2": "delete me"})
			del := d.SQL().Raw("DELETE FROM ").Ident(cols.Table).Raw(" WHERE ").Ident("id").Raw(" = ").Arg(ids["K2"])
			if _, err := d.Write().ExecContext(context.Background(), del.String(), del.Args...); err != nil {
				t.Fatal(err)
			}
			if got := found(t, d, "me"); !slices.Equal(got, []int{ids["K1"]}) {
				t.Fatalf("after the delete the index finds %v, want only %d", got, ids["K1"])
			}
			for _, s := range d.Table(res).Structures() {
				if strings.HasPrefix(s.Name(), "substring:") {
					if err := s.Check(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// The count of a search reads the index's range alone (an index-only
// scan on PostgreSQL, a covering index on MySQL and SQLite), whatever the
// table holds.
func TestSubstring_TheCountReadsOnlyTheIndex(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ctx := context.Background()
			for i := range 300 {
				insertNamed(t, d, fmt.Sprintf("E%03d", i), fmt.Sprintf("Abteilung %d Nord", i))
			}
			side := db.SubstringTable(cols.Table, cols.NameFold)
			explain := "EXPLAIN "
			switch {
			case d.Postgres():
				if _, err := d.Write().ExecContext(ctx, "VACUUM ANALYZE "+`"`+side+`"`); err != nil {
					t.Fatal(err)
				}
			case d.MySQL():
				if _, err := d.Write().ExecContext(ctx, "ANALYZE TABLE `"+side+"`"); err != nil {
					t.Fatal(err)
				}
			default:
				explain = "EXPLAIN QUERY PLAN "
			}
			s := d.SQL().Raw(explain + "SELECT COUNT(*) FROM ")
			db.NewSubstring(cols.Table, cols.NameFold, "ord").From(s, "g")
			if plan := explainPlan(t, d, s); !indexOnlyPlan(d.Dialect, plan, side+"_gram") {
				t.Errorf("the plan reads more than the index %s_gram:\n%s", side, plan)
			}
		})
	}
}

// explainPlan runs an EXPLAIN and returns every column of every row.
func explainPlan(t *testing.T, d *db.DB, s *db.SQL) string {
	t.Helper()
	rows, err := d.Read().QueryContext(context.Background(), s.String(), s.Args...)
	if err != nil {
		t.Fatalf("%s: %v", s.String(), err)
	}
	defer rows.Close()
	names, _ := rows.Columns()
	var plan strings.Builder
	for rows.Next() {
		cells := make([]any, len(names))
		for i := range cells {
			cells[i] = new(any)
		}
		if err := rows.Scan(cells...); err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			v := *c.(*any)
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			fmt.Fprintf(&plan, "%v | ", v)
		}
		plan.WriteString("\n")
	}
	return plan.String()
}

// Records written without the index (by an earlier version, or behind the
// service's back) are indexed by a reindex, which trusts the index then.
func TestReindex_IndexesWhatWasWrittenWithoutTheIndex(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ctx := context.Background()
			indexed(t, d, map[string]string{"I1": "indexed", "I2": "indexed too"})
			for i := range 3 {
				if _, err := insert(d, fmt.Sprintf("unindexed-%d", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Check(ctx); err == nil {
				t.Fatal("Check finds nothing wrong with records that have no rows and were not counted")
			}
			if err := d.Reindex(ctx, true, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Check(ctx); err != nil {
				t.Fatalf("after the reindex: %v", err)
			}
			for _, col := range cols.Search {
				if !d.Trusted(ctx, cols.Table, db.SubstringStructure(col)) {
					t.Errorf("the substring index of %s is not trusted after the reindex", col)
				}
			}
		})
	}
}
