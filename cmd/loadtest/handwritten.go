package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The issue that set the performance targets measured Personnel against a
// hand-written Go service on the same machine: net/http, database/sql and
// plain statements. handwritten is that service, for read by id and the
// list (page, page_size, ordering by name, a name search), run as a
// process of its own (this binary again, with -handwritten) over the
// database Personnel was seeded into, with Personnel's pool size. It
// counts with COUNT(*), pages with OFFSET and searches with LIKE '%...%',
// as the did. It checks no token and writes no log line, which
// favours it. Its statements run under the request's context, as
// idiomatic net/http code's do.

// The environment names the database the hand-written service reads.
const (
	handwrittenDriverEnv = "LOADTEST_HANDWRITTEN_DRIVER" // "mysql", "pgx" or "sqlite"
	handwrittenDSNEnv    = "LOADTEST_HANDWRITTEN_DSN"
)

// handwrittenServes reports whether the hand-written service answers the
// scenario's requests.
func handwrittenServes(scenario string) bool {
	switch scenario {
	case "read", "list_page1", "list_page_size_100", "icontains_selective", "icontains_broad", "icontains_short", "ordering_name_desc":
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
	driver, dsn := os.Getenv(handwrittenDriverEnv), os.Getenv(handwrittenDSNEnv)
	if driver == "mysql" {
		// Arguments interpolated by the driver, as Personnel has them: left
		// at the driver's default, every statement with an argument would
		// cost a prepare and a close besides, and the comparison would
		// flatter Personnel.
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return err
		}
		mc.InterpolateParams = true
		dsn = mc.FormatDSN()
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	conns := 16 // Personnel's pool for MySQL and PostgreSQL
	if driver == "sqlite" {
		conns = max(4, 2*runtime.GOMAXPROCS(0)) // Personnel's readers
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.Ping(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	return (&http.Server{Handler: handwrittenHandler(db, driver), ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// handwrittenHandler answers read by id and the list from db, whose
// driver is driver.
func handwrittenHandler(db *sql.DB, driver string) http.Handler {
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
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusInternalServerError) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /personnel/api/departments/{id}/", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		d, err := scanDepartment(db.QueryRowContext(r.Context(), q(cols+" WHERE id = ?"), id))
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
		page, size := 1, 10
		if v, err := strconv.Atoi(r.FormValue("page")); err == nil && v > 0 {
			page = v
		}
		if v, err := strconv.Atoi(r.FormValue("page_size")); err == nil && v > 0 {
			size = min(v, 1000)
		}
		where, args := "", []any{}
		if term := r.FormValue("dept_name_icontains"); term != "" {
			// The lower-cased copy of the name the schema keeps: what a
			// case-insensitive column would be, scanned the same way.
			where, args = " WHERE dept_name_fold LIKE ?", append(args, "%"+strings.ToLower(term)+"%")
		}
		order := " ORDER BY id"
		if r.FormValue("ordering") == "-dept_name" {
			order = " ORDER BY dept_name DESC, id DESC"
		}
		var count int
		if err := db.QueryRowContext(r.Context(), q("SELECT COUNT(*) FROM personnel_department"+where), args...).Scan(&count); err != nil {
			fail(w, err)
			return
		}
		rows, err := db.QueryContext(r.Context(), q(cols+where+order+" LIMIT ? OFFSET ?"), append(args, size, (page-1)*size)...)
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
	return mux
}

// startHandwritten starts the hand-written service over the database that
// env points Personnel at.
func startHandwritten(backend string, env []string) (*server, error) {
	var dsn string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PERSONNEL_DB_DSN="); ok {
			dsn = v
		}
	}
	driver := map[string]string{"sqlite": "sqlite", "mysql": "mysql", "postgres": "pgx"}[backend]
	if backend == "sqlite" {
		dsn = "file:" + dsn + "?mode=ro&_pragma=busy_timeout(5000)"
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-handwritten")
	cmd.Env = append(os.Environ(), handwrittenDriverEnv+"="+driver, handwrittenDSNEnv+"="+dsn)
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
