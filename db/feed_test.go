package db_test

import (
	"context"
	"strings"
	"testing"

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
