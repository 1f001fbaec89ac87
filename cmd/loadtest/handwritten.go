package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The issue that set the performance targets measured Personnel against a
// hand-written Go service on the same machine: net/http, database/sql and
// plain statements. handwritten is that service, for read by id, the list
// (page, page_size, ordering by name, a name search) and a create, run as
// a process of its own (this binary again, with -handwritten) over the
// database Personnel was seeded into, with Personnel's pool size. It
// counts with COUNT(*), pages with OFFSET and searches with LIKE '%...%',
// as the did; a create is one INSERT into a table of its own
// (handwrittenTable), so that Personnel's tables are written by Personnel
// alone. It checks no token and writes no log line, which favours it. Its
// statements run under the request's context, as idiomatic net/http
// code's do.
//
// It runs its statements in one of two ways (handwrittenModes):
// "interpolated", the arguments written into the text by the driver as
// Personnel has them on MySQL (the simple protocol on PostgreSQL), and
// "prepared", each statement prepared once per pool with db.Prepare
// (server-side prepared statements and the binary protocol, no parsing per
// request), which is what a Go developer writes by default.

// The environment names the database the hand-written service reads and
// how it runs its statements.
const (
	handwrittenDriverEnv = "LOADTEST_HANDWRITTEN_DRIVER" // "mysql", "pgx" or "sqlite"
	handwrittenDSNEnv    = "LOADTEST_HANDWRITTEN_DSN"
	handwrittenModeEnv   = "LOADTEST_HANDWRITTEN_MODE" // one of handwrittenModes
)

// handwrittenModes are the ways the hand-written service runs its
// statements, in the order -compare starts them.
var handwrittenModes = []string{"interpolated", "prepared"}

// handwrittenTable names the tables the hand-written services create
// records in, one a mode ("handwritten_department_prepared"): the columns
// of Personnel's department table that it writes, the code unique, the name indexed and the parent a foreign key to
// Personnel's table, as a hand-written schema would have them.
const handwrittenTable = "handwritten_department"

// handwrittenServes reports whether the hand-written service answers the
// scenario's requests.
func handwrittenServes(scenario string) bool {
	switch scenario {
	case "read", "list_page1", "list_page_size_100", "icontains_selective", "icontains_broad", "icontains_short", "ordering_name_desc", "create":
		return true
	}
	return strings.HasPrefix(scenario, "deep_page_")
}

type department struct {
	ID     int64  `json:"id"`
	Code   string `json:"dept_code"`
	Name   string `json:"dept_name"`
	Parent *int64 `json:"parent_dept"`
}

func scanDepartment(s interface{ Scan(...any) error }) (department, error) {
	var d department
	var parent sql.NullInt64
	err := s.Scan(&d.ID, &d.Code, &d.Name, &parent)
	if parent.Valid {
		d.Parent = &parent.Int64
	}
	return d, err
}

// serveHandwritten runs the hand-written service until killed. It prints
// "listening <addr>" on standard output once it accepts connections.
func serveHandwritten() error {
	driver, dsn, mode := os.Getenv(handwrittenDriverEnv), os.Getenv(handwrittenDSNEnv), os.Getenv(handwrittenModeEnv)
	if !slices.Contains(handwrittenModes, mode) {
		return fmt.Errorf("%s=%q: want one of %s", handwrittenModeEnv, mode, strings.Join(handwrittenModes, ", "))
	}
	switch {
	case driver == "mysql" && mode == "interpolated":
		// Arguments interpolated by the driver, as Personnel has them: left
		// at the driver's default, every statement with an argument would
		// cost a prepare and a close besides.
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return err
		}
		mc.InterpolateParams = true
		dsn = mc.FormatDSN()
	case driver == "pgx" && mode == "interpolated":
		// pgx would otherwise prepare and keep each statement per
		// connection, which is the prepared mode.
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "default_query_exec_mode=simple_protocol"
	}
	conns := 16 // Personnel's pool for MySQL and PostgreSQL
	readDSN := dsn
	if driver == "sqlite" {
		conns = max(4, 2*runtime.GOMAXPROCS(0)) // Personnel's readers
		readDSN += "&mode=ro"
	}
	db, err := sql.Open(driver, readDSN)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	write := db
	if driver == "sqlite" {
		// One writer, as SQLite allows one at a time, with Personnel's
		// durability (FULL sync).
		if write, err = sql.Open(driver, dsn+"&_foreign_keys=1&_journal_mode=WAL&_synchronous=FULL"); err != nil {
			return err
		}
		write.SetMaxOpenConns(1)
	}
	if err := db.Ping(); err != nil {
		return err
	}
	table := handwrittenTable + "_" + mode
	if err := createHandwrittenTable(write, driver, table); err != nil {
		return err
	}
	h, err := handwrittenHandler(db, write, driver, table, mode == "prepared")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// createHandwrittenTable creates table, empty, in db.
func createHandwrittenTable(db *sql.DB, driver, table string) error {
	stmts := map[string][]string{
		"sqlite": {
			`DROP TABLE IF EXISTS ` + table,
			`CREATE TABLE ` + table + ` (id INTEGER PRIMARY KEY AUTOINCREMENT, dept_code TEXT NOT NULL UNIQUE,
				dept_name TEXT NOT NULL, dept_name_fold TEXT NOT NULL, parent_dept_id INTEGER REFERENCES personnel_department (id))`,
		},
		"mysql": {
			`DROP TABLE IF EXISTS ` + table,
			`CREATE TABLE ` + table + ` (id BIGINT AUTO_INCREMENT PRIMARY KEY, dept_code VARCHAR(50) NOT NULL UNIQUE,
				dept_name VARCHAR(100) NOT NULL, dept_name_fold VARCHAR(100) NOT NULL, parent_dept_id BIGINT NULL,
				FOREIGN KEY (parent_dept_id) REFERENCES personnel_department (id)) CHARACTER SET utf8mb4`,
		},
		"pgx": {
			`DROP TABLE IF EXISTS ` + table,
			`CREATE TABLE ` + table + ` (id BIGSERIAL PRIMARY KEY, dept_code VARCHAR(50) NOT NULL UNIQUE,
				dept_name VARCHAR(100) NOT NULL, dept_name_fold VARCHAR(100) NOT NULL, parent_dept_id BIGINT NULL REFERENCES personnel_department (id))`,
		},
	}[driver]
	stmts = append(stmts, `CREATE INDEX `+table+`_name ON `+table+` (dept_name)`,
		`CREATE INDEX `+table+`_parent ON `+table+` (parent_dept_id)`)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("creating %s: %w", table, err)
		}
	}
	return nil
}

// statements runs each statement of the hand-written service either
// plainly or prepared once on its pool.
type statements struct {
	prepared map[string]*sql.Stmt
}

// prepare prepares query on db when the statements are prepared.
func (s *statements) prepare(db *sql.DB, query string) error {
	if s.prepared == nil {
		return nil
	}
	st, err := db.Prepare(query)
	if err != nil {
		return fmt.Errorf("preparing %q: %w", query, err)
	}
	s.prepared[query] = st
	return nil
}

func (s *statements) queryRow(ctx context.Context, db *sql.DB, query string, args ...any) *sql.Row {
	if st := s.prepared[query]; st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, query, args...)
}

func (s *statements) query(ctx context.Context, db *sql.DB, query string, args ...any) (*sql.Rows, error) {
	if st := s.prepared[query]; st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.QueryContext(ctx, query, args...)
}

func (s *statements) exec(ctx context.Context, db *sql.DB, query string, args ...any) (sql.Result, error) {
	if st := s.prepared[query]; st != nil {
		return st.ExecContext(ctx, args...)
	}
	return db.ExecContext(ctx, query, args...)
}

// handwrittenHandler answers read by id and the list from db and creates
// records in table through write (db itself but on SQLite), whose driver
// is driver, preparing every statement once when prepared is set.
func handwrittenHandler(db, write *sql.DB, driver, table string, prepared bool) (http.Handler, error) {
	// q writes a statement's ? placeholders as the driver wants them.
	q := func(s string) string {
		if driver != "pgx" {
			return s
		}
		var b strings.Builder
		n := 0
		for _, c := range s {
			if c == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			} else {
				b.WriteRune(c)
			}
		}
		return b.String()
	}
	const cols = "SELECT id, dept_code, dept_name, parent_dept_id FROM personnel_department"
	const search = " WHERE dept_name_fold LIKE ?"
	orders := map[bool]string{false: " ORDER BY id", true: " ORDER BY dept_name DESC, id DESC"}
	readOne := q(cols + " WHERE id = ?")
	countAll := func(where string) string { return q("SELECT COUNT(*) FROM personnel_department" + where) }
	page := func(where, order string) string { return q(cols + where + order + " LIMIT ? OFFSET ?") }
	insert := q("INSERT INTO " + table + " (dept_code, dept_name, dept_name_fold, parent_dept_id) VALUES (?, ?, ?, ?)")
	if driver == "pgx" {
		insert += " RETURNING id"
	}
	var st statements
	if prepared {
		st.prepared = map[string]*sql.Stmt{}
		texts := []string{readOne}
		for _, where := range []string{"", search} {
			texts = append(texts, countAll(where))
			for _, order := range orders {
				texts = append(texts, page(where, order))
			}
		}
		for _, text := range texts {
			if err := st.prepare(db, text); err != nil {
				return nil, err
			}
		}
		if err := st.prepare(write, insert); err != nil {
			return nil, err
		}
	}
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusInternalServerError) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /personnel/api/departments/{id}/", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		d, err := scanDepartment(st.queryRow(r.Context(), db, readOne, id))
		switch {
		case err == sql.ErrNoRows:
			http.NotFound(w, r)
			return
		case err != nil:
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("GET /personnel/api/departments/{$}", func(w http.ResponseWriter, r *http.Request) {
		pageNo, size := 1, 10
		if v, err := strconv.Atoi(r.FormValue("page")); err == nil && v > 0 {
			pageNo = v
		}
		if v, err := strconv.Atoi(r.FormValue("page_size")); err == nil && v > 0 {
			size = min(v, 1000)
		}
		where, args := "", []any{}
		if term := r.FormValue("dept_name_icontains"); term != "" {
			// The lower-cased copy of the name the schema keeps: what a
			// case-insensitive column would be, scanned the same way.
			where, args = search, append(args, "%"+strings.ToLower(term)+"%")
		}
		order := orders[r.FormValue("ordering") == "-dept_name"]
		var count int
		if err := st.queryRow(r.Context(), db, countAll(where), args...).Scan(&count); err != nil {
			fail(w, err)
			return
		}
		rows, err := st.query(r.Context(), db, page(where, order), append(args, size, (pageNo-1)*size)...)
		if err != nil {
			fail(w, err)
			return
		}
		defer rows.Close()
		out := struct {
			Count int          `json:"count"`
			Data  []department `json:"data"`
		}{Count: count, Data: []department{}}
		for rows.Next() {
			d, err := scanDepartment(rows)
			if err != nil {
				fail(w, err)
				return
			}
			out.Data = append(out.Data, d)
		}
		if err := rows.Err(); err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /personnel/api/departments/{$}", func(w http.ResponseWriter, r *http.Request) {
		var d department
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&d); err != nil || d.Code == "" || d.Name == "" {
			http.Error(w, "want dept_code and dept_name", http.StatusBadRequest)
			return
		}
		args := []any{d.Code, d.Name, strings.ToLower(d.Name), d.Parent}
		if driver == "pgx" {
			if err := st.queryRow(r.Context(), write, insert, args...).Scan(&d.ID); err != nil {
				fail(w, err)
				return
			}
		} else {
			res, err := st.exec(r.Context(), write, insert, args...)
			if err != nil {
				fail(w, err)
				return
			}
			if d.ID, err = res.LastInsertId(); err != nil {
				fail(w, err)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(d)
	})
	return mux, nil
}

// startHandwritten starts the hand-written service over the database that
// env points Personnel at.
// mode is one of handwrittenModes.
func startHandwritten(backend, mode string, env []string) (*server, error) {
	var dsn string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PERSONNEL_DB_DSN="); ok {
			dsn = v
		}
	}
	driver := map[string]string{"sqlite": "sqlite", "mysql": "mysql", "postgres": "pgx"}[backend]
	if backend == "sqlite" {
		dsn = "file:" + dsn + "?_pragma=busy_timeout(5000)"
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-handwritten")
	cmd.Env = append(os.Environ(), handwrittenDriverEnv+"="+driver, handwrittenDSNEnv+"="+dsn, handwrittenModeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("the hand-written service did not start: %q %v", line, err)
	}
	return &server{cmd: cmd, base: "http://" + addr}, nil
}
