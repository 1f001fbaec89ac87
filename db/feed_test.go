package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
)

// A page of a table's feed is read from its cursor on: on MySQL and
// MariaDB the plan is a range of the index by table and number, not a
// lookup of the table's name that walks every entry before the cursor
// (what MariaDB picks unless told, and at a million entries a page then
// takes a hundred times longer than the read itself).
func TestFeed_APageIsReadFromItsCursorOnNotFromTheFirstEntry(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		if b.Name != config.DriverMySQL {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ctx := context.Background()
			const table, entries, batch = "personnel_department", 20000, 1000
			for start := 1; start <= entries; start += batch {
				var args []any
				for seq := start; seq < start+batch; seq++ {
					args = append(args, int64(seq), table, int64(seq), false, int64(0))
				}
				q := "INSERT INTO " + db.FeedTable + " (seq, table_name, record_id, deleted, at) VALUES " + db.Tuples(batch, 5)
				if _, err := d.Write().ExecContext(ctx, q, args...); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.Write().ExecContext(ctx, "ANALYZE TABLE "+db.FeedTable); err != nil {
				t.Fatal(err)
			}
			s := d.SQL().Raw("EXPLAIN " + db.FeedPageQuery(d))
			s.Args = []any{table, int64(entries / 2), 101}
			plan := explainPlan(t, d, s)
			if !strings.Contains(plan, "| range |") || !strings.Contains(plan, "change_table_name_seq") {
				t.Errorf("a page of the feed is not read as a range of change_table_name_seq:\n%s", plan)
			}
		})
	}
}

// Pruning the feed deletes the superseded entries and the deletions older
// than the retention (moving the horizon past the deletions), keeps the
// latest upsert of every record and whatever is newer; a later round
// reads only what was numbered since the one before: an old kept entry
// that a new entry supersedes goes, an entry planted behind the round's
// mark is not read again (a fresh replica's first round reads it).
func TestFeed_PruningReadsOnlyWhatWasNumberedSinceItsLastRound(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, cfg := b.Open(t)
			ctx := context.Background()
			const table = "personnel_department"
			now := time.Now()
			old, recent := now.Add(-10*24*time.Hour).UnixMilli(), now.UnixMilli()
			put := func(seq, record int64, deleted bool, at int64) {
				t.Helper()
				q := d.Render("INSERT INTO {change} (seq, table_name, record_id, deleted, at) VALUES (?, ?, ?, ?, ?)", db.Names{"change": db.FeedTable})
				if _, err := d.Write().ExecContext(ctx, q, seq, table, record, deleted, at); err != nil {
					t.Fatal(err)
				}
			}
			kept := func() []int64 {
				t.Helper()
				var seqs []int64
				rows, err := d.Reader().Query(ctx, d.Render("SELECT seq FROM {change} WHERE table_name = ? ORDER BY seq", db.Names{"change": db.FeedTable}), table)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var s int64
					if err := rows.Scan(&s); err != nil {
						t.Fatal(err)
					}
					seqs = append(seqs, s)
				}
				return seqs
			}
			prune := func(d *db.DB, want int) {
				t.Helper()
				n, err := d.PruneChanges(ctx, 7*24*time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if n != want {
					t.Fatalf("pruned %d entries, want %d (left %v)", n, want, kept())
				}
			}
			put(10, 1, false, old) // superseded by 11
			put(11, 1, false, old) // record 1's latest
			put(12, 2, false, old) // record 2's latest, until 17
			put(13, 3, true, old)  // a deletion
			put(14, 4, false, recent)
			prune(d, 2)
			if got, want := kept(), []int64{11, 12, 14}; !slices.Equal(got, want) {
				t.Fatalf("after the first round: %v, want %v", got, want)
			}
			var horizon int64
			rows, err := d.Reader().Query(ctx, d.Render("SELECT seq FROM {horizon} WHERE table_name = ?", db.Names{"horizon": db.FeedHorizonTable}), table)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				if err := rows.Scan(&horizon); err != nil {
					t.Fatal(err)
				}
			}
			rows.Close()
			if horizon != 13 {
				t.Fatalf("the horizon is %d after pruning the deletion numbered 13", horizon)
			}
			put(1, 6, false, old) // behind the mark: superseded by 2
			put(2, 6, false, old)
			put(17, 2, false, recent) // supersedes 12
			put(18, 5, false, recent)
			prune(d, 1)
			if got, want := kept(), []int64{1, 2, 11, 14, 17, 18}; !slices.Equal(got, want) {
				t.Fatalf("after the second round: %v, want %v", got, want)
			}
			fresh := dbtest.MustOpen(t, cfg)
			prune(fresh, 1)
			if got, want := kept(), []int64{2, 11, 14, 17, 18}; !slices.Equal(got, want) {
				t.Fatalf("after a fresh replica's first round: %v, want %v", got, want)
			}
		})
	}
}
