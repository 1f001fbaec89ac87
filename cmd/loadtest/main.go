// Command loadtest measures Personnel end to end: it builds the real
// binary, seeds departments through `personnel seed`, starts `personnel
// serve`, and drives every scenario over loopback with many concurrent
// keep-alive connections, on SQLite and (given DSNs) on MySQL/MariaDB and
// PostgreSQL, at each size asked for. It prints requests/s, p50 and p99
// latency, errors and the server's peak resident memory as a Markdown
// table.
//
//	go run ./cmd/loadtest -records 10000,100000,1000000 -connections 32 -duration 10s \
//	    -mysql 'root@tcp(127.0.0.1:3306)/test' -postgres 'postgres://postgres@127.0.0.1:5432/test'
//
// With -compare, the scenarios a plain service can answer (read, lists,
// searches, ordering, deep page, create) are also driven against
// hand-written services over the same database, as the performance issues
// measured: one interpolating its arguments, one preparing its statements
// once per pool (-compare=interpolated or -compare=prepared for one of
// them); see handwritten.go.
//
// With -without, each performance mechanism named is measured against the
// same binary with it turned off (PERSONNEL_WITHOUT), both serving the same
// database, in alternation, on the scenarios the mechanism is for (with
// -compare, the hand-written services too): see without.go.
//
// With -seeded, the -mysql and -postgres DSNs name databases seeded
// already (personnel seed --count N --resource department, N the one size
// in -records), used as they are: a million records take minutes to seed,
// and a change can then be measured before and after on the same data.
// -sqlite=false leaves SQLite out.
//
// The load generator runs on the same machine as the server and takes part
// of its CPU; the figures are for the pair.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// withSQLite says whether SQLite is tested as well as the DSNs given.
var withSQLite = flag.Bool("sqlite", true, "test SQLite too (false: only the databases -mysql and -postgres name)")

// seeded says the -mysql and -postgres DSNs name databases seeded already.
var seeded = flag.Bool("seeded", false, "the -mysql and -postgres DSNs name databases that personnel seed --count <-records> --resource department filled: use them as they are (no scratch database, no seeding, nothing dropped), so that runs at 1,000,000 records need not seed again; one size in -records")

func main() {
	records := flag.String("records", "10000,100000", "comma-separated numbers of departments to test at")
	conns := flag.Int("connections", 32, "concurrent connections")
	duration := flag.Duration("duration", 10*time.Second, "time per scenario")
	mysqlDSN := flag.String("mysql", "", "administrative MySQL DSN; when set, MySQL is tested too (a scratch database is created and dropped)")
	postgresDSN := flag.String("postgres", "", "administrative PostgreSQL URL (postgres://user@host:5432/db); when set, PostgreSQL is tested too (a scratch database is created and dropped)")
	only := flag.String("scenarios", "", "comma-separated scenarios to run (default all)")
	sustained := flag.Duration("sustained", 0, "instead of the scenarios, run a mixed workload this long and check that no acknowledged write was lost")
	var compare compareFlag
	flag.Var(&compare, "compare", "also drive hand-written services (net/http, database/sql, COUNT(*), OFFSET, LIKE, one INSERT a create) over the same database, in alternation, for the scenarios they serve: -compare=interpolated, -compare=prepared, or -compare (both)")
	storage := flag.Bool("storage", false, "after seeding, print the space the table, each structure, the audit trail and the change feed take (personnel storage); -scenarios none then runs nothing else")
	without := flag.String("without", "", "comma-separated performance mechanisms ("+strings.Join(mechanismNames(), ", ")+") to measure each against the same service without it, in alternation, on the scenarios it is for")
	handwritten := flag.Bool("handwritten", false, "serve the hand-written service (-compare starts it; not for use by hand)")
	flag.Parse()
	if *handwritten {
		if err := serveHandwritten(); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest -handwritten:", err)
			os.Exit(1)
		}
		return
	}
	if *sustained > 0 {
		*only = "sustained"
		*duration = *sustained
	}
	admin := map[string]string{"mysql": *mysqlDSN, "postgres": *postgresDSN}
	if err := checkMechanisms(*without); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest -without:", err)
		os.Exit(2)
	}
	if err := run(*records, *conns, *duration, admin, *only, compare.modes, *without, *storage); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(records string, conns int, duration time.Duration, admin map[string]string, only string, compare []string, without string, storage bool) error {
	dir, err := os.MkdirTemp("", "personnel-load")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "personnel")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/personnel").CombinedOutput(); err != nil {
		return fmt.Errorf("building: %v\n%s", err, out)
	}
	var backends []string
	if *withSQLite {
		backends = append(backends, "sqlite")
	}
	for _, b := range []string{"mysql", "postgres"} {
		if admin[b] != "" {
			backends = append(backends, b)
		}
	}
	fmt.Printf("Date: %s. Machine: %d CPUs (%s), %s. Go %s. %d connections, %s per scenario.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpuModel(), memTotal(), runtime.Version(), conns, duration)
	fmt.Println("| backend | records | scenario | requests/s | p50 ms | p99 ms | errors | peak RSS MiB |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|")
	for _, backend := range backends {
		for _, s := range strings.Split(records, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("-records: %q", s)
			}
			if err := runSize(bin, dir, backend, admin[backend], n, conns, duration, only, compare, without, storage); err != nil {
				return fmt.Errorf("%s at %d: %w", backend, n, err)
			}
		}
	}
	return nil
}

// server is a running personnel serve.
type server struct {
	cmd   *exec.Cmd
	base  string
	token string
}

func runSize(bin, dir, backend, adminDSN string, n, conns int, duration time.Duration, only string, compare []string, without string, storage bool) error {
	env := append(os.Environ(), "PERSONNEL_ADDR=127.0.0.1:0", "PERSONNEL_LOG_FORMAT=json",
		"PERSONNEL_ADMIN_USER=load", "PERSONNEL_ADMIN_PASSWORD=load-password", "PERSONNEL_BCRYPT_COST=4",
		"PERSONNEL_JWT_SECRET=load-test-secret-load-test-secret-xx",
		// The generator logs in once and hammers; do not throttle it.
		"PERSONNEL_LOGIN_FAILURES_PER_ADDRESS=1000000")
	switch backend {
	case "sqlite":
		env = append(env, "PERSONNEL_DB_DSN="+filepath.Join(dir, fmt.Sprintf("load-%d.db", n)))
	case "mysql", "postgres":
		if *seeded {
			env = append(env, "PERSONNEL_DB_DRIVER="+backend, "PERSONNEL_DB_DSN="+adminDSN)
			return measure(bin, dir, backend, env, n, conns, duration, only, compare, without, storage)
		}
		scratch := scratchDatabase
		if backend == "postgres" {
			scratch = scratchPostgres
		}
		dsn, drop, err := scratch(adminDSN)
		if err != nil {
			return err
		}
		defer drop()
		env = append(env, "PERSONNEL_DB_DRIVER="+backend, "PERSONNEL_DB_DSN="+dsn)
	}
	seed := exec.Command(bin, "seed", "--count", strconv.Itoa(n), "--resource", "department")
	seed.Env = env
	var seedErr bytes.Buffer
	seed.Stderr = &seedErr
	out, err := seed.Output()
	if err != nil {
		return fmt.Errorf("seeding: %v\n%s%s", err, out, seedErr.Bytes())
	}
	// Standard error, so that the table on standard output stays whole.
	fmt.Fprintf(os.Stderr, "%s: %s", backend, out)
	return measure(bin, dir, backend, env, n, conns, duration, only, compare, without, storage)
}

// measure runs the scenarios against the database env names, seeded.
func measure(bin, dir, backend string, env []string, n, conns int, duration time.Duration, only string, compare []string, without string, storage bool) error {
	if storage {
		st := exec.Command(bin, "storage")
		st.Env = env
		out, err := st.CombinedOutput()
		if err != nil {
			return fmt.Errorf("measuring the storage: %v\n%s", err, out)
		}
		fmt.Printf("\n%s at %d records:\n\n```\n%s```\n\n", backend, n, out)
	}
	if only == "none" {
		return nil
	}
	var hws []*server
	for _, mode := range compare {
		hw, err := startHandwritten(backend, mode, env)
		if err != nil {
			return err
		}
		defer func() {
			hw.cmd.Process.Kill()
			hw.cmd.Wait()
		}()
		hws = append(hws, hw)
	}
	if without != "" {
		return measureMechanisms(bin, dir, backend, env, n, conns, duration, only, without, hws, compare)
	}
	srv, err := start(bin, dir, "serve", env)
	if err != nil {
		return err
	}
	defer func() {
		srv.cmd.Process.Signal(os.Interrupt)
		srv.cmd.Wait()
	}()
	root, size, err := srv.bigRoot()
	if err != nil {
		return err
	}
	if only == "sustained" {
		return srv.sustained(backend, n, root, conns, duration)
	}
	for _, sc := range scenarios(n, root, size) {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
			continue
		}
		if len(hws) > 0 && handwrittenServes(sc.name) {
			for _, hw := range hws {
				if err := sameAnswer(srv, hw, sc); err != nil {
					return fmt.Errorf("%s: %w", sc.name, err)
				}
			}
			compareWith(srv, hws, compare, sc, backend, n, conns, duration)
			continue
		}
		if sc.prepare != nil {
			if err := sc.prepare(srv); err != nil {
				return fmt.Errorf("%s: %w", sc.name, err)
			}
		}
		res := srv.drive(sc, conns, duration).summary()
		name := sc.name
		if sc.records > 1 {
			name += fmt.Sprintf(" (%.0f records/s)", res.rate*float64(sc.records))
		}
		printRow(backend, n, name, res, srv)
	}
	return nil
}

func printRow(backend string, n int, name string, res result, srv *server) {
	fmt.Printf("| %s | %d | %s | %.0f | %.2f | %.2f | %d | %.1f |\n", backend, n, name,
		res.rate, ms(res.p50), ms(res.p99), res.errors, float64(peakRSS(srv.cmd.Process.Pid))/1024)
}

// sameAnswer checks, on one request of sc, that the hand-written service
// answers what Personnel does (the same record; a list of the same length
// and count), so that the comparison does not time a service that skips
// the work. A search may differ slightly (strings.ToLower is not quite
// Personnel's case folding): that is reported, not failed, as the scan
// costs the same.
func sameAnswer(srv, hw *server, sc scenario) error {
	_, path, _ := sc.req(rand.New(rand.NewPCG(7, 7)), 0)
	var ours, theirs struct {
		ID    int
		Count int
		Data  []json.RawMessage
	}
	if err := srv.getJSON(path, &ours); err != nil {
		return err
	}
	if err := hw.getJSON(path, &theirs); err != nil {
		return fmt.Errorf("the hand-written service: %w", err)
	}
	if ours.ID == theirs.ID && ours.Count == theirs.Count && len(ours.Data) == len(theirs.Data) {
		return nil
	}
	msg := fmt.Sprintf("%s: Personnel answered id %d, count %d, %d records; the hand-written service id %d, count %d, %d records",
		path, ours.ID, ours.Count, len(ours.Data), theirs.ID, theirs.Count, len(theirs.Data))
	if strings.Contains(path, "_icontains=") && theirs.Count > 0 {
		fmt.Fprintln(os.Stderr, "note:", msg)
		return nil
	}
	return errors.New(msg)
}

// compareRounds is how many times compareWith drives the services
// forward and then backward (ABBA for two, ABCCBA for three), so that a
// machine getting steadily faster or slower during the run (a neighbour's
// load on a shared host) favours none.
const compareRounds = 2 // with slices of d/8: each service is driven d/2, as the pair always was

// compareWith drives sc against Personnel and against each hand-written
// service (hws, run in modes) in turn, and prints a row for each, the
// hand-written ones named with Personnel's throughput ratio to them.
func compareWith(srv *server, hws []*server, modes []string, sc scenario, backend string, n, conns int, d time.Duration) {
	names := []string{"Personnel"}
	for _, m := range modes {
		names = append(names, "hand-written "+m)
	}
	alternateAll(append([]*server{srv}, hws...), names, sc, backend, n, conns, d)
}

// alternateAll drives sc against each of svcs in turn, forward then
// backward, compareRounds times, each slice an eighth of d (so that all
// see the same machine, and each is driven half of d), and prints a row for each, every row
// after the first named with the first's throughput ratio to it and, in
// brackets, the lowest and highest of that ratio over the rounds (how
// much it moved while they ran). It returns those ratios.
func alternateAll(svcs []*server, names []string, sc scenario, backend string, n, conns int, d time.Duration) []float64 {
	slice := d / 8
	all := make([]samples, len(svcs))
	rounds := make([][]samples, compareRounds)
	for r := range rounds {
		rounds[r] = make([]samples, len(svcs))
		order := make([]int, 0, 2*len(svcs))
		for i := range svcs {
			order = append(order, i)
		}
		for i := range svcs {
			order = append(order, len(svcs)-1-i)
		}
		for _, i := range order {
			got := svcs[i].drive(sc, conns, slice)
			rounds[r][i].add(got)
			all[i].add(got)
		}
	}
	first := all[0].summary()
	printRow(backend, n, sc.name, first, svcs[0])
	var ratios []float64
	for i := 1; i < len(svcs); i++ {
		res := all[i].summary()
		lo, hi := 0.0, 0.0
		for r := range rounds {
			x := rounds[r][0].summary().rate / rounds[r][i].summary().rate
			if r == 0 || x < lo {
				lo = x
			}
			if r == 0 || x > hi {
				hi = x
			}
		}
		ratio := first.rate / res.rate
		printRow(backend, n, fmt.Sprintf("%s, %s (%s %.2fx, rounds %.2f-%.2f)", sc.name, names[i], names[0], ratio, lo, hi), res, svcs[i])
		ratios = append(ratios, ratio)
	}
	for i := range svcs {
		cpu, gen := all[i].cpuPerRequest()
		fmt.Fprintf(os.Stderr, "%s %s: CPU µs a request, server + load generator: %s %.0f + %.0f\n", backend, sc.name, names[i], cpu, gen)
	}
	return ratios
}

// compareFlag is -compare: the modes of the hand-written service to drive
// beside Personnel (handwrittenModes); bare, all of them.
type compareFlag struct{ modes []string }

func (f *compareFlag) String() string { return strings.Join(f.modes, ",") }

// IsBoolFlag lets -compare stand alone.
func (f *compareFlag) IsBoolFlag() bool { return true }

func (f *compareFlag) Set(v string) error {
	switch v {
	case "true", "both":
		f.modes = slices.Clone(handwrittenModes)
	case "false":
		f.modes = nil
	default:
		f.modes = nil
		for _, m := range splitList(v) {
			if !slices.Contains(handwrittenModes, m) {
				return fmt.Errorf("%q is not one of %s", m, strings.Join(handwrittenModes, ", "))
			}
			f.modes = append(f.modes, m)
		}
	}
	return nil
}

// listeningAddr waits for the "listening" line in the server's log and
// returns its address.
func listeningAddr(log string, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(log)
		if err != nil {
			return "", err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" {
				if a, ok := m["addr"].(string); ok {
					return a, nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	data, _ := os.ReadFile(log)
	return "", fmt.Errorf("the server did not start; its log:\n%s", data)
}

// start starts `personnel serve` with env, logging to dir/name.log.
func start(bin, dir, name string, env []string) (*server, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	// The server writes its log to the file itself: piped through this
	// process, every request's log line would cost the load generator,
	// which shares the CPUs, a read and a write of its own.
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	logFile.Close()
	a, err := listeningAddr(logFile.Name(), 2*time.Minute)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + a}
	resp, err := http.Post(s.base+"/jwt-api-token-auth/", "application/json",
		strings.NewReader(`{"username":"load","password":"load-password"}`))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Token == "" {
		return nil, fmt.Errorf("login: %d", resp.StatusCode)
	}
	s.token = body.Token
	return s, nil
}

// bigRoot returns the first root and how many records lie below it, for
// the descendants scenario.
func (s *server) bigRoot() (root, size int, err error) {
	var page struct {
		Count int
		Data  []struct{ ID int }
	}
	if err := s.getJSON("/personnel/api/departments/?parent_dept_isnull=true&page_size=1", &page); err != nil || len(page.Data) == 0 {
		return 0, 0, fmt.Errorf("no root found: %v", err)
	}
	root = page.Data[0].ID
	if err := s.getJSON(fmt.Sprintf("/personnel/api/departments/%d/descendants/", root), &page); err != nil {
		return 0, 0, err
	}
	return root, page.Count, nil
}

func (s *server) getJSON(path string, v any) error {
	req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
	req.Header.Set("Authorization", "JWT "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// scenario makes one request at a time.
type scenario struct {
	name string
	req  func(rng *rand.Rand, seq int64) (method, path string, body []byte)
	// prepare, when set, runs once against the server before the
	// scenario is driven.
	prepare func(s *server) error
	// records, when above one, is how many records a request writes; the
	// scenario's rows then give the records written a second too.
	records int
}

// Search terms people type. Selective ones name a unit and a place (about
// 1 in 1,500 names match); broad ones a single common word (about 1 in
// 40); short ones are one or two characters, as CJK names often are.
var (
	selective = []string{"ärzte köln", "finanzen berlin", "logística sevilla", "продажи москва", "営業部 東京", "wartung wien"}
	broad     = []string{"sales", "ärzte", "отдел", "wartung", "zürich"}
	short     = []string{"営業", "総務", "ik"}
)

func icontains(name string, terms []string) scenario {
	return scenario{name: name, req: func(rng *rand.Rand, _ int64) (string, string, []byte) {
		return http.MethodGet, "/personnel/api/departments/?dept_name_icontains=" + url.QueryEscape(terms[rng.IntN(len(terms))]), nil
	}}
}

func scenarios(n, root, subtree int) []scenario {
	get := func(path string) func(*rand.Rand, int64) (string, string, []byte) {
		return func(*rand.Rand, int64) (string, string, []byte) { return http.MethodGet, path, nil }
	}
	const api = "/personnel/api/departments/"
	deep := min(5000, max(1, n/20))
	return []scenario{
		{name: "read", req: func(rng *rand.Rand, _ int64) (string, string, []byte) {
			return http.MethodGet, api + strconv.Itoa(1+rng.IntN(n)) + "/", nil
		}},
		{name: "list_page1", req: get(api)},
		{name: "list_page_size_100", req: get(api + "?page_size=100")},
		icontains("icontains_selective", selective),
		icontains("icontains_broad", broad),
		icontains("icontains_short", short),
		// Searches keep their counts only while the table does not
		// change (resource/countcache.go): here the table changes all the
		// time, so most searches count again.
		{name: "icontains_broad_1_in_20_updates", req: func(rng *rand.Rand, seq int64) (string, string, []byte) {
			if rng.IntN(20) == 0 {
				return http.MethodPatch, api + strconv.Itoa(1+rng.IntN(n)) + "/", fmt.Appendf(nil, `{"dept_name":"Renamed %d"}`, seq)
			}
			return http.MethodGet, api + "?dept_name_icontains=" + url.QueryEscape(broad[rng.IntN(len(broad))]), nil
		}},
		{name: "ordering_name_desc", req: get(api + "?ordering=-dept_name")},
		{name: fmt.Sprintf("deep_page_%d", deep), req: get(api + "?page=" + strconv.Itoa(deep))},
		{name: fmt.Sprintf("descendants_page1 (%d below)", subtree), req: get(api + strconv.Itoa(root) + "/descendants/")},
		{name: "create", req: func(_ *rand.Rand, seq int64) (string, string, []byte) {
			return http.MethodPost, api, fmt.Appendf(nil, `{"dept_code":"LOAD-%s%d","dept_name":"Load test %d","parent_dept":%d}`, runTag, seq, seq, root)
		}},
		// Every statement of a write serves the 32 records of a bulk
		// create: how far sharing them cuts what a record costs.
		{name: fmt.Sprintf("bulk_create_%d", bulkRecords), req: func(_ *rand.Rand, seq int64) (string, string, []byte) {
			body := []byte("[")
			for i := range bulkRecords {
				if i > 0 {
					body = append(body, ',')
				}
				body = fmt.Appendf(body, `{"dept_code":"BULK-%s%d-%d","dept_name":"Load test %d %d","parent_dept":%d}`, runTag, seq, i, seq, i, root)
			}
			return http.MethodPost, api, append(body, ']')
		}, records: bulkRecords},
		{name: "update", req: func(rng *rand.Rand, seq int64) (string, string, []byte) {
			return http.MethodPatch, api + strconv.Itoa(1+rng.IntN(n)) + "/", fmt.Appendf(nil, `{"dept_name":"Renamed %d"}`, seq)
		}},
		feedPages(api),
	}
}

// bulkRecords is how many records a request of the bulk create scenario
// creates.
const bulkRecords = 32

// runTag makes the codes of one run's creates differ from an earlier
// run's, so that runs over one -seeded database do not collide on codes.
var runTag = strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36*36), 36) + "-"

// feedPages is the scenario of a consumer of the change feed catching up:
// a page of 100 changes after a cursor anywhere in what the feed keeps
// (one per record seeded), drawn from the cursors of a walk through the
// whole feed made first.
func feedPages(api string) scenario {
	var cursors []string
	return scenario{name: "changes_100", req: func(rng *rand.Rand, _ int64) (string, string, []byte) {
		return http.MethodGet, api + "changes/?limit=100&cursor=" + url.QueryEscape(cursors[rng.IntN(len(cursors))]), nil
	}, prepare: func(s *server) error {
		cursors = []string{""}
		for {
			var page struct {
				Cursor string
				More   bool
			}
			if err := s.getJSON(api+"changes/?limit=1000&cursor="+url.QueryEscape(cursors[len(cursors)-1]), &page); err != nil {
				return fmt.Errorf("walking the feed: %w", err)
			}
			if !page.More {
				return nil
			}
			cursors = append(cursors, page.Cursor)
		}
	}}
}

type result struct {
	rate     float64
	p50, p99 time.Duration
	errors   int64
}

// samples are the latencies of the requests a scenario made after its
// warm-up, over how long they were made.
type samples struct {
	lat     []time.Duration
	errors  int64
	elapsed time.Duration
	// requests counts every answered request, the warm-up's too; cpu and
	// selfCPU are the CPU time the server and this process spent on them.
	requests     int64
	cpu, selfCPU time.Duration
}

func (s *samples) add(o samples) {
	s.lat = append(s.lat, o.lat...)
	s.errors += o.errors
	s.elapsed += o.elapsed
	s.requests += o.requests
	s.cpu += o.cpu
	s.selfCPU += o.selfCPU
}

// cpuPerRequest is the server's and the load generator's CPU time per
// request, in µs.
func (s samples) cpuPerRequest() (server, generator float64) {
	n := float64(max(s.requests, 1))
	return float64(s.cpu.Microseconds()) / n, float64(s.selfCPU.Microseconds()) / n
}

func (s samples) summary() result {
	slices.Sort(s.lat)
	r := result{errors: s.errors}
	if len(s.lat) > 0 {
		r.rate = float64(len(s.lat)) / s.elapsed.Seconds()
		r.p50 = s.lat[len(s.lat)/2]
		r.p99 = s.lat[len(s.lat)*99/100]
	}
	return r
}

var seq atomic.Int64

// drive runs sc on conns connections for d, after a short warm-up.
func (s *server) drive(sc scenario, conns int, d time.Duration) samples {
	transport := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	var failed atomic.Int64
	lat := make([][]time.Duration, conns)
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Second)
	defer cancel()
	warm := time.Now().Add(time.Second)
	cpu0, self0 := cpuTime(s.cmd.Process.Pid), cpuTime(os.Getpid())
	var answered atomic.Int64
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for ctx.Err() == nil {
				method, path, body := sc.req(rng, seq.Add(1))
				req, _ := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
				req.Header.Set("Authorization", "JWT "+s.token)
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
				if t0.Before(warm) {
					continue
				}
				if resp.StatusCode >= 300 {
					failed.Add(1)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	out := samples{errors: failed.Load(), elapsed: d, requests: answered.Load(),
		cpu: cpuTime(s.cmd.Process.Pid) - cpu0, selfCPU: cpuTime(os.Getpid()) - self0}
	for _, l := range lat {
		out.lat = append(out.lat, l...)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuTime is the CPU time (user and system) process pid has used so far,
// in clock ticks of 10 ms.
func cpuTime(pid int) time.Duration {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return statCPUTime(string(data))
}

// statCPUTime reads the CPU time (utime plus stime, fields 14 and 15, in
// clock ticks of 10 ms) from the text of /proc/<pid>/stat; 0 when it has
// none.
func statCPUTime(stat string) time.Duration {
	// The command name, in brackets, may hold spaces and brackets: count
	// fields after its last ") ".
	i := strings.LastIndex(stat, ") ")
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+2:])
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.Atoi(f[11])
	system, _ := strconv.Atoi(f[12])
	return time.Duration(user+system) * 10 * time.Millisecond
}

// peakRSS returns the process's resident memory high-water mark in KiB.
func peakRSS(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return 0
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return fmt.Sprintf("%d GiB RAM", kb/1024/1024)
		}
	}
	return "unknown RAM"
}

// scratchDatabase creates an empty database and returns its DSN and a
// function that drops it.
func scratchDatabase(adminDSN string) (string, func(), error) {
	mc, err := mysql.ParseDSN(adminDSN)
	if err != nil {
		return "", nil, err
	}
	db, err := sql.Open("mysql", adminDSN)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("personnel_load_%d", time.Now().UnixNano())
	if _, err := db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4"); err != nil {
		db.Close()
		return "", nil, err
	}
	mc.DBName = name
	return mc.FormatDSN(), func() {
		db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
		db.Close()
	}, nil
}

// scratchPostgres creates an empty PostgreSQL database and returns its URL
// and a function that drops it.
func scratchPostgres(adminURL string) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("-postgres: want a URL such as postgres://postgres@127.0.0.1:5432/test")
	}
	db, err := sql.Open("pgx", adminURL)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("personnel_load_%d", time.Now().UnixNano())
	if _, err := db.Exec(`CREATE DATABASE "` + name + `" ENCODING 'UTF8' TEMPLATE template0`); err != nil {
		db.Close()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		db.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`)
		db.Close()
	}, nil
}

// sustained runs a mixed workload (reads, lists, searches, creates,
// updates, deletes) for d, keeps every acknowledged create and delete, and
// checks at the end that the database holds exactly those.
func (s *server) sustained(backend string, n, root, conns int, d time.Duration) error {
	var (
		mu       sync.Mutex
		created  = map[string]int{} // code -> id, acknowledged
		deleted  = map[string]bool{}
		status5  atomic.Int64
		failures atomic.Int64
		lat      = make([][]time.Duration, conns)
		ops      atomic.Int64
	)
	transport := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	do := func(method, path string, body []byte) (int, []byte, error) {
		req, _ := http.NewRequest(method, s.base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "JWT "+s.token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data, nil
	}
	const api = "/personnel/api/departments/"
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []string
			for i := 0; time.Now().Before(end); i++ {
				var method, path string
				var body []byte
				var code string
				p := rng.IntN(100)
				switch {
				case p < 45:
					method, path = http.MethodGet, api+strconv.Itoa(1+rng.IntN(n))+"/"
				case p < 55:
					method, path = http.MethodGet, api+"?ordering=-dept_name&page="+strconv.Itoa(1+rng.IntN(50))
				case p < 60:
					method, path = http.MethodGet, api+"?dept_name_icontains="+url.QueryEscape(selective[rng.IntN(len(selective))])
				case p < 75 || len(mine) == 0:
					code = fmt.Sprintf("SUS-%d-%d", w, i)
					method, path = http.MethodPost, api
					body = fmt.Appendf(nil, `{"dept_code":%q,"dept_name":"Sustained %d","parent_dept":%d}`, code, i, root)
				case p < 92:
					method, path = http.MethodPatch, api+strconv.Itoa(1+rng.IntN(n))+"/"
					body = fmt.Appendf(nil, `{"dept_name":"Updated %d %d"}`, w, i)
				default:
					code = mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					mu.Lock()
					id := created[code]
					mu.Unlock()
					method, path = http.MethodDelete, api+strconv.Itoa(id)+"/"
				}
				t0 := time.Now()
				st, data, err := do(method, path, body)
				ops.Add(1)
				if err != nil {
					failures.Add(1)
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
				if st >= 500 {
					status5.Add(1)
				}
				switch {
				case method == http.MethodPost && st == http.StatusCreated:
					var rec struct{ ID int }
					json.Unmarshal(data, &rec)
					mu.Lock()
					created[code] = rec.ID
					mu.Unlock()
					mine = append(mine, code)
				case method == http.MethodDelete && st == http.StatusNoContent:
					mu.Lock()
					deleted[code] = true
					mu.Unlock()
				case st >= 300 && st != http.StatusNotFound:
					failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	lost := 0
	for code, id := range created {
		st, _, err := do(http.MethodGet, api+strconv.Itoa(id)+"/", nil)
		if err != nil {
			return err
		}
		if deleted[code] != (st == http.StatusNotFound) || (st != http.StatusOK && st != http.StatusNotFound) {
			lost++
		}
	}
	fmt.Printf("\nSustained mixed load on %s at %d records: %d connections for %s.\n\n", backend, n, conns, d)
	fmt.Println("| requests | requests/s | p50 ms | p99 ms | 5xx | other failures | acknowledged creates | acknowledged deletes | lost writes | peak RSS MiB |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	fmt.Printf("| %d | %.0f | %.2f | %.2f | %d | %d | %d | %d | %d | %.1f |\n", ops.Load(), float64(len(all))/d.Seconds(),
		ms(all[len(all)/2]), ms(all[len(all)*99/100]), status5.Load(), failures.Load(), len(created), len(deleted), lost,
		float64(peakRSS(s.cmd.Process.Pid))/1024)
	if status5.Load() > 0 || lost > 0 {
		return fmt.Errorf("%d server errors and %d lost writes", status5.Load(), lost)
	}
	return nil
}
