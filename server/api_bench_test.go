package server_test

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/seed"
	"personnel/server"
)

// benchRecords is how many departments the API benchmarks run over.
const benchRecords = 100000

// subtreeCTE is the service's recursive query for the descendants of ?.
const subtreeCTE = "WITH RECURSIVE `s` (`id`, `depth`) AS (SELECT `id`, 1 FROM `personnel_department` WHERE `parent_dept_id` = ? " +
	"UNION ALL SELECT `c`.`id`, `s`.`depth` + 1 FROM `personnel_department` AS `c` JOIN `s` ON `c`.`parent_dept_id` = `s`.`id` WHERE `s`.`depth` < 1000) "

// scenario is one API request beside the same statements issued directly
// through database/sql (plain calls, as most code makes them; the service
// keeps its statements prepared on SQLite): the ratio of the two is the
// cost of our layers.
type scenario struct {
	name string
	api  func(b *testing.B)
	sql  func(b *testing.B)
}

// forDriver writes q, written for SQLite and MySQL (backquotes, ?
// placeholders), as db's driver wants it: on PostgreSQL with double quotes
// and $n placeholders.
func forDriver(db *stdsql.DB, q string) string {
	if _, pg := db.Driver().(*stdlib.Driver); !pg {
		return q
	}
	var out strings.Builder
	n := 0
	for _, c := range q {
		switch c {
		case '`':
			out.WriteByte('"')
		case '?':
			n++
			out.WriteString("$" + strconv.Itoa(n))
		default:
			out.WriteRune(c)
		}
	}
	return out.String()
}

// queryAll runs a query and scans every row, as a hand-written service would.
func queryAll(b *testing.B, db *stdsql.DB, q string, args ...any) {
	rows, err := db.QueryContext(context.Background(), forDriver(db, q), args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var (
		id, parent stdsql.NullInt64
		code, name string
	)
	for rows.Next() {
		if err := rows.Scan(&id, &code, &name, &parent); err != nil {
			b.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
}

func countRows(b *testing.B, db *stdsql.DB, q string, args ...any) {
	var n int
	if err := db.QueryRowContext(context.Background(), forDriver(db, q), args...).Scan(&n); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAPI runs every API scenario of the performance issue through
// the real router (token checking included) over 100,000 departments, and
// beside each its SQL issued directly:
//
//	go test -run '^$' -bench BenchmarkAPI -benchmem ./server/
func BenchmarkAPI(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be, func(c *config.Config) { c.PageSizeMax = 10000 })
			ctx := context.Background()
			if err := seed.Fill(ctx, server.Loaders(a.db)["department"], seed.Options{Count: benchRecords, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			root := benchTree(b, a, 10000)
			if be.Name == config.DriverPostgres {
				// What autovacuum does soon after a load, and personnel
				// seed at once (db.Table.BulkLoad): without statistics the
				// planner scans where an index serves, and index-only
				// scans visit the table until pages are marked all-visible.
				if _, err := a.db.Write().ExecContext(ctx, "VACUUM (ANALYZE)"); err != nil {
					b.Fatal(err)
				}
			}
			pools := a.db.Pools()
			read, write := pools["read"], pools["write"]
			if read == nil { // one pool, named after the server
				read, write = pools[be.Name], pools[be.Name]
			}
			r := res{config.Resource{Path: "departments", Fields: config.ResourceFields{Code: "dept_code", Name: "dept_name", Parent: "parent_dept"}}}
			const cols = "SELECT `id`, `dept_code`, `dept_name`, `parent_dept_id` FROM `personnel_department`"
			// The count of a whole table, and the count the service keeps
			// (read as it reads it).
			total := "SELECT COUNT(*) FROM `personnel_department`"
			kept := "SELECT COALESCE(SUM(`records`), 0) FROM `personnel_count_slot` WHERE `table_name` = 'personnel_department'"
			get := func(path string) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						if st := a.raw(http.MethodGet, path, nil); st != http.StatusOK {
							b.Fatal(st)
						}
					}
				}
			}
			lock := "" // what the service's update locks with
			if be.Name != config.DriverSQLite {
				lock = " FOR UPDATE"
			}
			var seq atomic.Int64
			var searches []scenario
			for _, sr := range []struct{ name, term string }{
				{"icontains", "ärzte köln"},                          // about 1 in 1,500 names
				{"icontains_longer_than_grams", "logística sevilla"}, // 17 characters: the index gives candidates
				{"icontains_broad", "sales"},                         // about 1 in 40
				{"icontains_two_chars", "営業"},                        // CJK names are short
			} {
				// The service counts the substring index's range; then it
				// reads the page's ids from the index (a selective search),
				// or first walks the table in id order as far as a few times
				// what the page should need (a common one: resource/search.go).
				// (with the size of the table, which the planner weighs)
				count := a.db.SQL().Raw("SELECT (SELECT COUNT(*) FROM ")
				sub := db.NewSubstring("personnel_department", "dept_name_fold", sr.term)
				sub.From(count, "g").Raw("), ")
				a.db.Table(server.CompiledResources()[0]).KeptCount(count)
				var matches, total int
				if err := read.QueryRow(count.String(), count.Args...).Scan(&matches, &total); err != nil {
					b.Fatal(err)
				}
				page := a.db.SQL().Raw("SELECT `r`.`id`, `r`.`dept_code`, `r`.`dept_name`, `r`.`parent_dept_id` FROM `personnel_department` AS `r` JOIN (SELECT `g`.`id` FROM ")
				sub.From(page, "g").Raw(" ORDER BY `g`.`id` + 0 LIMIT 10) AS `p` ON `r`.`id` = `p`.`id` ORDER BY `r`.`id`")
				like := "%" + sr.term + "%"
				// A search longer than the grams: the index's candidates,
				// checked by LIKE, for the page and for the list's count.
				var recount *db.SQL
				if !sub.Exact() {
					page = a.db.SQL().Raw(cols + " AS `r` WHERE `r`.`id` IN (SELECT `g`.`id` FROM ")
					sub.From(page, "g").Raw(") AND `r`.`dept_name_fold` LIKE ").Arg(like).Raw(" ESCAPE '!' ORDER BY `r`.`id` LIMIT 10")
					recount = a.db.SQL().Raw("SELECT COUNT(*) FROM `personnel_department` AS `r` WHERE `r`.`id` IN (SELECT `g`.`id` FROM ")
					sub.From(recount, "g").Raw(") AND `r`.`dept_name_fold` LIKE ").Arg(like).Raw(" ESCAPE '!'")
				}
				if walk := 10 * total / max(matches, 1); walk < matches && sub.Exact() {
					limit := matches // as far as the index would cost; on MySQL, which reads it all, a few times the walk
					if be.Name == config.DriverMySQL {
						limit = min(matches, 4*walk+1)
					}
					page = a.db.SQL().Raw("SELECT `r`.`id`, `r`.`dept_code`, `r`.`dept_name`, `r`.`parent_dept_id` FROM `personnel_department` AS `r` " +
						"JOIN (SELECT `w`.`id` FROM (SELECT `r`.`id`, `r`.`dept_name_fold` FROM `personnel_department` AS `r` ORDER BY `r`.`id` LIMIT ").Arg(limit).
						Raw(") AS `w` WHERE `w`.`dept_name_fold` LIKE ").Arg("%" + sr.term + "%").
						Raw(" ORDER BY `w`.`id` LIMIT 10) AS `p` ON `r`.`id` = `p`.`id` ORDER BY `r`.`id`")
				}
				path := r.coll() + "?dept_name_icontains=" + url.QueryEscape(sr.term)
				// A write to the table, outside the timer, before each
				// request of the scenarios "after a write": none finds its
				// count kept (resource/countcache.go), as while the table
				// is being written.
				bump := forDriver(write, "UPDATE `personnel_department_changes` SET `changes` = `changes` + 1 WHERE `slot` = 0")
				written := func(b *testing.B, after bool) {
					if after {
						b.StopTimer()
						if _, err := write.Exec(bump); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
				}
				// What the service issued before it kept the counts of
				// searches, walked to a bound on MariaDB and read pages of
				// candidates in order on PostgreSQL (search.go), and what
				// it still issues elsewhere after a write: the page, the
				// index's count, and for candidates the list's count.
				counted := func(after bool) func(b *testing.B) {
					return func(b *testing.B) {
						for b.Loop() {
							written(b, after)
							queryAll(b, read, page.String(), page.Args...)
							if err := read.QueryRow(count.String(), count.Args...).Scan(&matches, &total); err != nil {
								b.Fatal(err)
							}
							if recount != nil {
								countRows(b, read, recount.String(), recount.Args...)
							}
						}
					}
				}
				searches = append(searches, scenario{sr.name, get(path), counted(false)},
					scenario{sr.name + "_after_a_write", func(b *testing.B) {
						for b.Loop() {
							written(b, true)
							if st := a.raw(http.MethodGet, path, nil); st != http.StatusOK {
								b.Fatal(st)
							}
						}
					}, counted(true)},
					// What the service did before the substring index (and
					// does while it is not trusted): scan the folded names
					// with LIKE, for the page and for the count.
					scenario{sr.name + "_like_scan", nil, func(b *testing.B) {
						for b.Loop() {
							queryAll(b, read, cols+" WHERE `dept_name_fold` LIKE ? ORDER BY `id` LIMIT 10", like)
							countRows(b, read, "SELECT COUNT(*) FROM `personnel_department` WHERE `dept_name_fold` LIKE ?", like)
						}
					}})
			}
			for _, sc := range append(searches, []scenario{
				{"read", get(r.item(5000)), func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, cols+" WHERE `id` = ?", 5000)
					}
				}},
				{"list_page1", get(r.coll()), func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, cols+" ORDER BY `id` LIMIT 10")
						countRows(b, read, total)
					}
				}},
				{"list_page_size_100", get(r.coll() + "?page_size=100"), func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, cols+" ORDER BY `id` LIMIT 100")
						countRows(b, read, total)
					}
				}},
				{"ordering_name_desc", get(r.coll() + "?ordering=-dept_name"), func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, cols+" ORDER BY `dept_name_fold` DESC, `dept_name` DESC, `id` DESC LIMIT 10")
						countRows(b, read, total)
					}
				}},
				// A hand-written service that sorts by the name column,
				// which no index serves (the service's index is on the
				// folded name, then the name): the database sorts the
				// table for every page.
				{"ordering_name_desc_filesort", nil, func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, cols+" ORDER BY `dept_name` DESC, `id` DESC LIMIT 10")
						countRows(b, read, total)
					}
				}},
				{"deep_page_5000", get(r.coll() + "?page=5000"), func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, "SELECT `t`.`id`, `dept_code`, `dept_name`, `parent_dept_id` FROM `personnel_department` AS `t` "+
							"JOIN (SELECT `id` FROM `personnel_department` ORDER BY `id` LIMIT 10 OFFSET 49990) AS `page` ON `t`.`id` = `page`.`id` ORDER BY `t`.`id`")
						countRows(b, read, total)
					}
				}},
				// What the service did before the id block counts (and
				// does while they are not trusted): the deferred join,
				// stepping over 49,990 index entries, and the kept count.
				{"deep_page_5000_deferred_join_kept_count", nil, func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, "SELECT `t`.`id`, `dept_code`, `dept_name`, `parent_dept_id` FROM `personnel_department` AS `t` "+
							"JOIN (SELECT `id` FROM `personnel_department` ORDER BY `id` LIMIT 10 OFFSET 49990) AS `page` ON `t`.`id` = `page`.`id` ORDER BY `t`.`id`")
						countRows(b, read, kept)
					}
				}},
				{"deep_page_plain_offset_full_rows", nil, func(b *testing.B) {
					for b.Loop() {
						rows, err := read.Query(forDriver(read, "SELECT * FROM `personnel_department` ORDER BY `id` LIMIT 10 OFFSET 49990"))
						if err != nil {
							b.Fatal(err)
						}
						for rows.Next() {
						}
						rows.Close()
						countRows(b, read, total)
					}
				}},
				{"create", func(b *testing.B) {
					for b.Loop() {
						code := fmt.Sprintf("BENCH-A%d", seq.Add(1))
						body := fmt.Sprintf(`{"dept_code":%q,"dept_name":"Bench %s","parent_dept":%d}`, code, code, root)
						if st := a.raw(http.MethodPost, r.coll(), []byte(body)); st != http.StatusCreated {
							b.Fatal(st)
						}
					}
				}, func(b *testing.B) {
					for b.Loop() {
						code := fmt.Sprintf("bench-s%d", seq.Add(1))
						tx, err := write.Begin()
						if err != nil {
							b.Fatal(err)
						}
						if _, err := tx.Exec(forDriver(write, "INSERT INTO `personnel_department` (`dept_code`, `dept_code_fold`, `dept_name`, `dept_name_fold`, `parent_dept_id`) VALUES (?, ?, ?, ?, ?)"),
							code, code, "bench "+code, "bench "+code, root); err != nil {
							b.Fatal(err)
						}
						if err := tx.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}},
				{"update", func(b *testing.B) {
					for b.Loop() {
						body := fmt.Sprintf(`{"dept_name":"Renamed %d"}`, seq.Add(1))
						if st := a.raw(http.MethodPatch, r.item(7000), []byte(body)); st != http.StatusOK {
							b.Fatal(st)
						}
					}
				}, func(b *testing.B) {
					for b.Loop() {
						name := fmt.Sprintf("renamed %d", seq.Add(1))
						tx, err := write.Begin()
						if err != nil {
							b.Fatal(err)
						}
						var id, parent stdsql.NullInt64
						var code, old string
						if err := tx.QueryRow(forDriver(write, cols+" WHERE `id` = ?"+lock), 7000).Scan(&id, &code, &old, &parent); err != nil {
							b.Fatal(err)
						}
						if _, err := tx.Exec(forDriver(write, "UPDATE `personnel_department` SET `dept_name` = ?, `dept_name_fold` = ? WHERE `id` = ?"), name, name, 7000); err != nil {
							b.Fatal(err)
						}
						if err := tx.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}},
				// The closure's range of the page's ids, their rows, and the
				// subtree's kept count: what the service issues.
				{"descendants_10000_page1", get(r.item(root) + "descendants/"), func(b *testing.B) {
					for b.Loop() {
						closurePage(b, read, cols, root)
						countRows(b, read, "SELECT COALESCE(SUM(`records`), 0) FROM `personnel_department_below` WHERE `ancestor` = ?", root)
					}
				}},
				// What the service issued before it kept subtree counts: the
				// same page, and the closure's range counted.
				{"descendants_10000_page1_range_count", nil, func(b *testing.B) {
					for b.Loop() {
						closurePage(b, read, cols, root)
						countRows(b, read, "SELECT COUNT(*) FROM `personnel_department_closure` WHERE `ancestor` = ? AND `depth` > 0", root)
					}
				}},
				// What the service issued before the closure: the recursive
				// walk's ids with the total beside them, then the page's rows.
				{"descendants_10000_page1_walk", nil, func(b *testing.B) {
					for b.Loop() {
						rows, err := read.Query(forDriver(read, subtreeCTE+"SELECT `id`, COUNT(*) OVER () FROM `s` ORDER BY `id` LIMIT 10 OFFSET 0"), root)
						if err != nil {
							b.Fatal(err)
						}
						var ids []any
						var total int
						for rows.Next() {
							var id int
							rows.Scan(&id, &total)
							ids = append(ids, id)
						}
						rows.Close()
						queryAll(b, read, cols+" WHERE `id` IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ORDER BY `id`", ids...)
					}
				}},
				// The straightforward form: join the whole subtree to the
				// table, for the page and again for the count.
				{"descendants_10000_page1_joined", nil, func(b *testing.B) {
					for b.Loop() {
						queryAll(b, read, subtreeCTE+"SELECT `t`.`id`, `dept_code`, `dept_name`, `parent_dept_id` FROM `personnel_department` AS `t` JOIN `s` ON `t`.`id` = `s`.`id` ORDER BY `t`.`id` LIMIT 10", root)
						countRows(b, read, subtreeCTE+"SELECT COUNT(*) FROM `personnel_department` AS `t` JOIN `s` ON `t`.`id` = `s`.`id`", root)
					}
				}},
			}...) {
				if sc.api != nil {
					b.Run(sc.name+"/api", sc.api)
				}
				b.Run(sc.name+"/sql", sc.sql)
			}
		})
	}
}

// closurePage reads page 1 of the descendants of root as the service
// does: the page's ids from the closure's index on ancestor, then their
// rows.
func closurePage(b *testing.B, read *stdsql.DB, cols string, root int) {
	rows, err := read.Query(forDriver(read, "SELECT `descendant` FROM `personnel_department_closure` WHERE `ancestor` = ? AND `depth` > 0 ORDER BY `descendant` LIMIT 10 OFFSET 0"), root)
	if err != nil {
		b.Fatal(err)
	}
	var ids []any
	for rows.Next() {
		var id int
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	queryAll(b, read, cols+" WHERE `id` IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ORDER BY `id`", ids...)
}
