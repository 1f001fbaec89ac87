package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// handwrittenDB is a SQLite file with the columns of Personnel's
// department table that the hand-written service reads, and records
// 1..n named "Sales n" (every third "Ärzte n"), parented to 1.
func handwrittenDB(t *testing.T, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "hw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE personnel_department (id INTEGER PRIMARY KEY, dept_code TEXT, dept_name TEXT, dept_name_fold TEXT, parent_dept_id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("Sales %d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("Ärzte %d", i)
		}
		var parent any
		if i > 1 {
			parent = 1
		}
		if _, err := db.Exec(`INSERT INTO personnel_department VALUES (?, ?, ?, ?, ?)`, i, fmt.Sprintf("C%d", i), name, strings.ToLower(name), parent); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func getHandwritten(t *testing.T, h http.Handler, path string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Body)
		}
	}
	return rec.Code
}

// The baseline must do the work it is timed for, or the comparison
// flatters it: each answer is checked against what the data holds.
func TestHandwritten_AnswersWhatTheDataHolds(t *testing.T) {
	for _, mode := range handwrittenModes {
		t.Run(mode, func(t *testing.T) { testHandwrittenAnswers(t, handwrittenService(t, handwrittenDB(t, 30), mode)) })
	}
}

// handwrittenService is the hand-written service in mode over db, with
// its table for creates.
func handwrittenService(t *testing.T, db *sql.DB, mode string) http.Handler {
	t.Helper()
	table := handwrittenTable + "_" + mode
	if err := createHandwrittenTable(db, "sqlite", table); err != nil {
		t.Fatal(err)
	}
	h, err := handwrittenHandler(db, db, "sqlite", table, mode == "prepared")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testHandwrittenAnswers(t *testing.T, h http.Handler) {
	const api = "/personnel/api/departments/"

	var d department
	if st := getHandwritten(t, h, api+"6/", &d); st != http.StatusOK || d.ID != 6 || d.Code != "C6" || d.Name != "Ärzte 6" || d.Parent == nil || *d.Parent != 1 {
		t.Fatalf("read 6: %d %+v", st, d)
	}
	if st := getHandwritten(t, h, api+"1/", &d); st != http.StatusOK || d.Parent != nil {
		t.Fatalf("read 1: %d %+v", st, d)
	}
	if st := getHandwritten(t, h, api+"31/", &d); st != http.StatusNotFound {
		t.Fatalf("read 31: %d, want 404", st)
	}

	type list struct {
		Count int
		Data  []department
	}
	ids := func(l list) []int64 {
		var out []int64
		for _, d := range l.Data {
			out = append(out, d.ID)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		count int
		ids   string
	}{
		{"", 30, "[1 2 3 4 5 6 7 8 9 10]"},
		{"?page=3&page_size=4", 30, "[9 10 11 12]"},
		{"?page=4", 30, "[]"},
		{"?dept_name_icontains=" + url.QueryEscape("ÄRZTE"), 10, "[3 6 9 12 15 18 21 24 27 30]"},
		{"?dept_name_icontains=es+2&page_size=3", 8, "[2 20 22]"},
		// By bytes, "Ärzte …" sorts after every "Sales …": 9, 6, 30, 3, 27, …
		{"?ordering=-dept_name&page_size=3", 30, "[9 6 30]"},
	} {
		var l list
		if st := getHandwritten(t, h, api+tc.query, &l); st != http.StatusOK {
			t.Fatalf("%q: %d", tc.query, st)
		}
		if got := fmt.Sprint(ids(l)); l.Count != tc.count || got != tc.ids {
			t.Errorf("%q: count %d, ids %s; want %d, %s", tc.query, l.Count, got, tc.count, tc.ids)
		}
	}
}

// A create is one INSERT into the service's own table, which keeps what
// it was sent: the record comes back with a new id, and is in the table.
func TestHandwritten_CreateInsertsOneRecordIntoItsOwnTable(t *testing.T) {
	for _, mode := range handwrittenModes {
		t.Run(mode, func(t *testing.T) {
			db := handwrittenDB(t, 3)
			h := handwrittenService(t, db, mode)
			for i, want := range []int64{1, 2} {
				rec := httptest.NewRecorder()
				body := fmt.Sprintf(`{"dept_code":"LOAD-%d","dept_name":"Load Test %d","parent_dept":1}`, i, i)
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/personnel/api/departments/", strings.NewReader(body)))
				var d department
				if err := json.Unmarshal(rec.Body.Bytes(), &d); rec.Code != http.StatusCreated || err != nil || d.ID != want || d.Code != fmt.Sprintf("LOAD-%d", i) || d.Parent == nil || *d.Parent != 1 {
					t.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
				}
			}
			var n int
			var fold string
			if err := db.QueryRow(`SELECT COUNT(*), MAX(dept_name_fold) FROM `+handwrittenTable+"_"+mode).Scan(&n, &fold); err != nil || n != 2 || fold != "load test 1" {
				t.Fatalf("the table holds %d records, %q, %v", n, fold, err)
			}
			if err := db.QueryRow(`SELECT COUNT(*) FROM personnel_department`).Scan(&n); err != nil || n != 3 {
				t.Fatalf("Personnel's table holds %d records, %v", n, err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/personnel/api/departments/", strings.NewReader(`{"dept_code":"X"}`)))
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("a create without a name: %d", rec.Code)
			}
		})
	}
}

func TestCompareFlag_NamesTheModesToDrive(t *testing.T) {
	for _, tc := range []struct {
		arg, want string
		ok        bool
	}{
		{"true", "interpolated,prepared", true},
		{"prepared", "prepared", true},
		{"interpolated", "interpolated", true},
		{"prepared,interpolated", "prepared,interpolated", true},
		{"false", "", true},
		{"cached", "", false},
	} {
		var f compareFlag
		err := f.Set(tc.arg)
		if (err == nil) != tc.ok || err == nil && f.String() != tc.want {
			t.Errorf("-compare=%s: %q, %v", tc.arg, f.String(), err)
		}
	}
}

func TestHandwrittenServes_TheScenariosAPlainServiceCanAnswer(t *testing.T) {
	for _, sc := range scenarios(1000, 1, 10) {
		want := !strings.HasPrefix(sc.name, "descendants") && !strings.HasPrefix(sc.name, "bulk_create") && sc.name != "update" && !strings.Contains(sc.name, "updates") && sc.name != "changes_100"
		if got := handwrittenServes(sc.name); got != want {
			t.Errorf("handwrittenServes(%q) = %v, want %v", sc.name, got, want)
		}
	}
}

// How much CPU time a stretch of work gets depends on what else the
// machine runs, so no test measures one: the parsing is checked on
// /proc/<pid>/stat lines as the kernel writes them, and the reading on
// this process, whose CPU time never goes down.
func TestCPUTime_ReadsUserAndSystemTicksFromProcStat(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want time.Duration
	}{
		{"4242 (personnel) S 1 4242 4242 0 -1 4194560 2071 0 0 0 137 25 0 0 20 0 9 0 123 0 0", 1620 * time.Millisecond},
		{"17 (my (odd) name) R 1 17 17 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 9 0 0", 70 * time.Millisecond},
		{"18 (a) b) S 1 18 18 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9 0 0", 20 * time.Millisecond},
		{"", 0},
		{"19 (short) S 1 2", 0},
	} {
		if got := statCPUTime(tc.stat); got != tc.want {
			t.Errorf("statCPUTime(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
	before := cpuTime(os.Getpid())
	if after := cpuTime(os.Getpid()); before < 0 || after < before {
		t.Fatalf("this process's CPU time went from %v to %v", before, after)
	}
}
