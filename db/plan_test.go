package db_test

import (
	"regexp"
	"strings"
	"testing"

	"entgo.io/ent/dialect"
)

// mysqlUsingIndex is MySQL's and MariaDB's "Extra" item for a read of the
// index alone, not "Using index condition" (which reads the rows too) or
// "Using index for group-by".
var mysqlUsingIndex = regexp.MustCompile(`Using index(;| \||$)`)

// indexOnlyPlan reports whether plan, the rows of an EXPLAIN on a database
// of dialect d (as explainPlan joins them), reads the index named index
// and nothing else, in the words of whichever server wrote it:
//   - SQLite: "USING COVERING INDEX <index>";
//   - PostgreSQL: "Index Only Scan using <index>";
//   - MySQL and MariaDB: the index as the key, and "Using index";
//   - TiDB (a MySQL dialect whose plan names operators): an IndexReader
//     over an index scan of the index, with no TableReader or IndexLookUp
//     (both of which read the table's rows).
func indexOnlyPlan(d, plan, index string) bool {
	switch d {
	case dialect.SQLite:
		return strings.Contains(plan, "USING COVERING INDEX "+index)
	case dialect.Postgres:
		return strings.Contains(plan, "Index Only Scan using "+index)
	}
	if strings.Contains(plan, "Reader") || strings.Contains(plan, "IndexLookUp") {
		scan := strings.Contains(plan, "IndexRangeScan") || strings.Contains(plan, "IndexFullScan")
		return strings.Contains(plan, "IndexReader") && scan && strings.Contains(plan, "index:"+index+"(") &&
			!strings.Contains(plan, "TableReader") && !strings.Contains(plan, "IndexLookUp") && !strings.Contains(plan, "TableRowIDScan")
	}
	return strings.Contains(plan, index) && mysqlUsingIndex.MatchString(plan)
}

func TestIndexOnlyPlan_ReadsEachServersWording(t *testing.T) {
	const ix = "t_gram"
	for _, tc := range []struct {
		name, dialect, plan string
		want                bool
	}{
		{"sqlite", dialect.SQLite, "3 | 0 | 0 | SEARCH g USING COVERING INDEX t_gram (gram=?) | \n", true},
		{"sqlite, rows too", dialect.SQLite, "3 | 0 | 0 | SEARCH g USING INDEX t_gram (gram=?) | \n", false},
		{"postgres", dialect.Postgres, "Aggregate  (cost=4.3..4.3 rows=1 width=8) | \n  ->  Index Only Scan using t_gram on t g | \n", true},
		{"postgres, rows too", dialect.Postgres, "Aggregate | \n  ->  Index Scan using t_gram on t g | \n", false},
		{"mariadb", dialect.MySQL, "1 | SIMPLE | g | range | t_gram | t_gram | 1030 | <nil> | 25 | Using where; Using index | \n", true},
		{"mysql, index last", dialect.MySQL, "1 | SIMPLE | g | <nil> | ref | t_gram | t_gram | 1030 | const | 25 | 100 | Using index | \n", true},
		{"mysql, rows too", dialect.MySQL, "1 | SIMPLE | g | range | t_gram | t_gram | 1030 | <nil> | 25 | Using index condition | \n", false},
		{"tidb", dialect.MySQL, "StreamAgg_17 | 1.00 | root |  | funcs:count(Column#9)->Column#4 | \n" +
			"└─IndexReader_18 | 1.00 | root |  | index:StreamAgg_9 | \n" +
			"  └─StreamAgg_9 | 1.00 | cop[tikv] |  | funcs:count(1)->Column#9 | \n" +
			"    └─IndexRangeScan_16 | 25.00 | cop[tikv] | table:g, index:t_gram(gram, ord) | range:[\"ab\",\"ab\"], keep order:false | \n", true},
		{"tidb, rows too", dialect.MySQL, "HashAgg_7 | 1.00 | root |  | funcs:count(1)->Column#4 | \n" +
			"└─IndexLookUp_15 | 25.00 | root |  |  | \n" +
			"  ├─IndexRangeScan_13(Build) | 25.00 | cop[tikv] | table:g, index:t_gram(gram, ord) | range:[\"ab\",\"ab\"] | \n" +
			"  └─TableRowIDScan_14(Probe) | 25.00 | cop[tikv] | table:g | keep order:false | \n", false},
		{"tidb, table", dialect.MySQL, "StreamAgg_9 | 1.00 | root |  | funcs:count(1) | \n" +
			"└─TableReader_21 | 25.00 | root |  | data:Selection_20 | \n" +
			"  └─TableFullScan_19 | 300.00 | cop[tikv] | table:g | keep order:false | \n", false},
	} {
		if got := indexOnlyPlan(tc.dialect, tc.plan, ix); got != tc.want {
			t.Errorf("%s: indexOnlyPlan = %v, want %v:\n%s", tc.name, got, tc.want, tc.plan)
		}
	}
}
