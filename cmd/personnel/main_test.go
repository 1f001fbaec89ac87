package main_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/server"
)

// binary is the personnel command built once for these tests.
var binary string

// adminPassword is the first editor's, created at start-up by start.
const adminPassword = "admin-password"

// login returns a token of the first editor.
func (s *started) login(t *testing.T) string {
	t.Helper()
	resp, err := http.Post("http://"+s.addr+"/jwt-api-token-auth/", "application/json",
		strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Token string }
	if json.NewDecoder(resp.Body).Decode(&body) != nil || body.Token == "" {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return body.Token
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "personnel-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "personnel")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binary: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// started is a running personnel process.
type started struct {
	cmd  *exec.Cmd
	addr string
	logs chan map[string]any
	done chan error
}

// start runs the binary with env (and a fresh SQLite database unless env
// names one) and waits until it listens.
func start(t *testing.T, env ...string) *started {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "PERSONNEL_ADDR=127.0.0.1:0", "PERSONNEL_LOG_FORMAT=json",
		"PERSONNEL_DB_DSN="+filepath.Join(t.TempDir(), "data", "p.db"),
		"PERSONNEL_ADMIN_USER=admin", "PERSONNEL_ADMIN_PASSWORD="+adminPassword, "PERSONNEL_BCRYPT_COST=4")
	cmd.Env = append(cmd.Env, env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, logs: make(chan map[string]any, 100), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case s.logs <- m:
				default: // nobody is reading: drop the line, never block the server
				}
			}
		}
		close(s.logs)
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-s.logs:
			if !ok {
				t.Fatal("the server exited before listening")
			}
			if m["msg"] == "listening" {
				s.addr = m["addr"].(string)
				return s
			}
		case <-deadline:
			t.Fatal("the server did not start listening")
		}
	}
}

func TestServe_BadConfigFailsNamingTheSetting(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "PERSONNEL_PAGE_SIZE_MAX=many")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "PERSONNEL_PAGE_SIZE_MAX") {
		t.Fatalf("exit %v, output %s", err, out)
	}
}

func TestServe_SIGTERMLetsInFlightRequestsFinishThenStops(t *testing.T) {
	s := start(t)
	token := s.login(t)
	body := `{"dept_code":"HR","dept_name":"Human Resources"}`
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Send the headers and half the body: the request is now in flight.
	fmt.Fprintf(conn, "POST /personnel/api/departments/ HTTP/1.1\r\nHost: x\r\nAuthorization: JWT %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", token, len(body), body[:10])
	time.Sleep(200 * time.Millisecond)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		t.Error("new connections are still accepted after SIGTERM")
	}
	io.WriteString(conn, body[10:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request lost: %v", err)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request answered %d", resp.StatusCode)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}
}

// Request lines held to be written together are written before the
// process exits on SIGTERM, not lost with it.
func TestServe_HeldRequestLinesAreWrittenOnShutdown(t *testing.T) {
	s := start(t, "PERSONNEL_LOG_HOLD=1h")
	s.login(t)
	time.Sleep(200 * time.Millisecond)
	select {
	case m := <-s.logs:
		t.Fatalf("a line was written while request lines are held for an hour: %v", m)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var logged []any
	for m := range s.logs {
		if m["msg"] == "request" {
			logged = append(logged, m["route"])
		}
	}
	if len(logged) != 1 || logged[0] != "/jwt-api-token-auth/" {
		t.Fatalf("request lines written on shutdown: %v", logged)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("exit: %v", err)
	}
}

func TestServe_LogsWhereItListensAndWhichDatabase(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "logged.db")
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "PERSONNEL_ADDR=127.0.0.1:0", "PERSONNEL_LOG_FORMAT=text", "PERSONNEL_DB_DSN="+dsn)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "msg=listening") {
			break
		}
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "driver=sqlite") || !strings.Contains(all, dsn) || !strings.Contains(all, "addr=127.0.0.1:") {
		t.Fatalf("start-up log lacks the database or address:\n%s", all)
	}
}

func TestServe_SlowHeadersAreCutOffAtTheReadHeaderTimeout(t *testing.T) {
	s := start(t, "PERSONNEL_READ_HEADER_TIMEOUT=300ms")
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 512)
	n, _ := conn.Read(buf)
	if time.Since(start) > 4*time.Second {
		t.Fatal("the server kept a connection with unfinished headers open")
	}
	if strings.Contains(string(buf[:n]), "200 OK") {
		t.Fatalf("answered unfinished headers: %q", buf[:n])
	}
}

func TestHealthcheck_ExitsZeroOnlyWhenTheServerIsReady(t *testing.T) {
	s := start(t)
	_, port, _ := net.SplitHostPort(s.addr)
	cmd := exec.Command(binary, "healthcheck")
	cmd.Env = append(os.Environ(), "PERSONNEL_ADDR=:"+port)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck of a ready server: %v %s", err, out)
	}
	s.cmd.Process.Kill()
	<-s.done
	cmd = exec.Command(binary, "healthcheck")
	cmd.Env = append(os.Environ(), "PERSONNEL_ADDR=:"+port)
	if err := cmd.Run(); err == nil {
		t.Fatal("healthcheck passed with no server")
	}
}

// runBinary runs the binary with args and env (on top of this process's
// environment, with a fresh SQLite database) and returns what it printed
// and its exit status.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "PERSONNEL_DB_DSN="+filepath.Join(t.TempDir(), "p.db"), "PERSONNEL_LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestCLI_HelpListsCommandsAndGlobalFlags(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		out, errOut, code := runBinary(t, nil, arg)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %s", arg, code, errOut)
		}
		for _, want := range []string{"serve", "migrate", "recount", "reindex", "user", "seed", "healthcheck", "version", "--version", "-v, --verbose", "-h, --help"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not mention %s:\n%s", arg, want, out)
			}
		}
	}
}

func TestCLI_EveryCommandAnswersHelp(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--help"}, {"migrate", "--help"}, {"recount", "--help"}, {"reindex", "--help"}, {"seed", "--help"}, {"healthcheck", "-h"},
		{"version", "--help"}, {"user", "--help"}, {"user", "add", "--help"}, {"storage", "--help"},
	} {
		out, errOut, code := runBinary(t, nil, args...)
		if code != 0 || !strings.Contains(out+errOut, "sage") {
			t.Errorf("%v: exit %d, output %s%s", args, code, out, errOut)
		}
	}
	if out, _, _ := runBinary(t, nil, "seed", "--help"); !strings.Contains(out, "-append") || !strings.Contains(out, "-resource") {
		t.Errorf("seed --help does not list its flags on standard output:\n%s", out)
	}
}

func TestCLI_VersionPrintsModuleVersionAndRevision(t *testing.T) {
	info, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatal(err)
	}
	wantVersion, wantRevision := "", "unknown"
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			wantVersion = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			wantRevision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	want := "personnel " + wantVersion + ", revision " + wantRevision
	for _, arg := range []string{"version", "--version"} {
		out, _, code := runBinary(t, nil, arg)
		if code != 0 || !strings.HasPrefix(out, want) {
			t.Errorf("%s: exit %d, %q, want it to start with %q", arg, code, out, want)
		}
	}
}

func TestCLI_RecountCountsEveryResource(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		cfg := b.Config(t)
		env := []string{"PERSONNEL_DB_DRIVER=" + cfg.DBDriver, "PERSONNEL_DB_DSN=" + cfg.DBDSN, "PERSONNEL_JWT_SECRET=" + string(cfg.JWTSecret)}
		if _, errOut, code := runBinary(t, env, "migrate"); code != 0 {
			t.Fatalf("%s: migrate: exit %d, %s", b.Name, code, errOut)
		}
		out, errOut, code := runBinary(t, env, "recount")
		if code != 0 || !strings.Contains(out, "recounted every resource") {
			t.Fatalf("%s: recount: exit %d, %s%s", b.Name, code, out, errOut)
		}
	}
}

func TestCLI_AnUnknownRoleIsNamedWithTheValidOnes(t *testing.T) {
	_, errOut, code := runBinary(t, nil, "user", "add", "bob", "--role", "admin")
	if code != 2 || !strings.Contains(errOut, `unknown role "admin"`) || !strings.Contains(errOut, "editor") || !strings.Contains(errOut, "viewer") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

func TestCLI_UsageErrorsExit2AndFailuresExit1(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want int
	}{
		{args: []string{"frobnicate"}, want: 2},
		{args: []string{"serve", "--no-such-flag"}, want: 2},
		{args: []string{"migrate", "extra"}, want: 2},
		{args: []string{"seed", "--count", "many"}, want: 2},
		{args: []string{"seed", "--resource", "nothing-like-it"}, want: 2},
		{args: []string{"version", "extra"}, want: 2},
		{args: []string{"user"}, want: 2},
		{args: []string{"user", "frobnicate"}, want: 2},
		{args: []string{"user", "add"}, want: 2},
		{args: []string{"user", "add", "bob", "--role", "admin"}, want: 2},
		{args: []string{"user", "list", "--no-such-flag"}, want: 2},
		{args: []string{"user", "enable", "nobody"}, env: []string{"PERSONNEL_DB_DSN=/nonexistent/personnel.db"}, want: 1},
		{args: []string{"migrate"}, env: []string{"PERSONNEL_PAGE_SIZE_MAX=many"}, want: 1},
		{args: []string{"healthcheck"}, env: []string{"PERSONNEL_ADDR=127.0.0.1:1"}, want: 1},
	} {
		_, errOut, code := runBinary(t, tc.env, tc.args...)
		if code != tc.want || !strings.Contains(errOut, "personnel") {
			t.Errorf("%v: exit %d, want %d; stderr %s", tc.args, code, tc.want, errOut)
		}
	}
}

func TestCLI_CommandsLogOnlyWarningsUnlessVerbose(t *testing.T) {
	out, errOut, code := runBinary(t, nil, "migrate")
	if code != 0 || errOut != "" || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runBinary(t, nil, "-v", "migrate")
	if code != 0 || !strings.Contains(errOut, `"msg":"database"`) {
		t.Fatalf("-v migrate: exit %d, stderr %q", code, errOut)
	}
}

func TestSeed_ResourceByNameOrPathRefusesFullOnesUnlessAppend(t *testing.T) {
	r := server.CompiledResources()[0]
	dsn := "PERSONNEL_DB_DSN=" + filepath.Join(t.TempDir(), "seeded.db")
	out, errOut, code := runBinary(t, []string{dsn}, "seed", "--count", "1", "--resource", r.Path)
	if code != 0 || !strings.Contains(out, "seeded "+r.Path+" with 1 record in ") {
		t.Fatalf("seed by path: exit %d, %s%s", code, out, errOut)
	}
	// All resources are checked before any is written to.
	out, errOut, code = runBinary(t, []string{dsn}, "seed", "--count", "2")
	if code != 1 || !strings.Contains(errOut, r.Path+" holds 1 record;") || strings.Contains(out, "seeded") {
		t.Fatalf("seed into a full resource: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = runBinary(t, []string{dsn}, "seed", "--count", "2", "--resource", r.Name, "--append")
	if code != 0 || !strings.Contains(out, "seeded "+r.Path+" with 2 records") {
		t.Fatalf("seed --append by name: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code = runBinary(t, []string{dsn}, "seed", "--count", "1")
	if code != 1 || !strings.Contains(errOut, r.Path+" holds 3 records") {
		t.Fatalf("after append: exit %d, %s%s", code, out, errOut)
	}
	for _, other := range server.CompiledResources()[1:] {
		if strings.Contains(errOut, other.Path+" holds") {
			t.Errorf("%s was written to by a refused seed: %s", other.Path, errOut)
		}
	}
}

// storage prints, for every resource, a row per part with its records
// and bytes per record, and the audit trail and change feed per entry.
func TestCLI_StoragePrintsEveryResourceAndStructure(t *testing.T) {
	dsn := "PERSONNEL_DB_DSN=" + filepath.Join(t.TempDir(), "sized.db")
	if out, errOut, code := runBinary(t, []string{dsn}, "seed", "--count", "300"); code != 0 {
		t.Fatalf("seed: exit %d, %s%s", code, out, errOut)
	}
	out, errOut, code := runBinary(t, []string{dsn}, "storage")
	if code != 0 {
		t.Fatalf("storage: exit %d, %s%s", code, out, errOut)
	}
	for _, r := range server.CompiledResources() {
		for _, part := range []string{"table", "counts", "all"} {
			if !regexp.MustCompile(`(?m)^` + r.Table + ` +` + part + `\b.* 300 +[1-9][0-9]* +[0-9]+ *$`).MatchString(out) {
				t.Errorf("no %s row of %s with 300 records and their bytes:\n%s", part, r.Table, out)
			}
		}
	}
	n := len(server.CompiledResources()) * 300
	if !regexp.MustCompile(`audit trail +`+strconv.Itoa(n)+` entries +[1-9][0-9]* +[0-9]+ an entry`).MatchString(out) ||
		!regexp.MustCompile(`change feed +`+strconv.Itoa(n)+` entries +[1-9][0-9]* +[0-9]+ an entry`).MatchString(out) {
		t.Errorf("no audit trail or change feed row with %d entries:\n%s", n, out)
	}
}

func TestHealthcheck_ProbesTheHostOfPERSONNEL_ADDR(t *testing.T) {
	// 127.0.0.2 is a loopback address that 127.0.0.1 does not reach.
	s := start(t, "PERSONNEL_ADDR=127.0.0.2:0")
	if _, errOut, code := runBinary(t, []string{"PERSONNEL_ADDR=" + s.addr}, "healthcheck"); code != 0 {
		t.Fatalf("healthcheck of a server on %s: exit %d %s", s.addr, code, errOut)
	}
}

func TestStartup_GivesUpOnADatabaseThatNeverAnswersAfterTheWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, errOut, code := runBinary(t, []string{"PERSONNEL_DB_DRIVER=mysql", "PERSONNEL_DB_DSN=u:p@tcp(" + addr + ")/personnel", "PERSONNEL_DB_WAIT=2s"}, "migrate")
	if code != 1 || !strings.Contains(errOut, "did not answer in 2s") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if n := strings.Count(errOut, "trying again"); n < 2 {
		t.Fatalf("%d attempts logged, want one line per attempt:\n%s", n, errOut)
	}
}

// proxy accepts connections on ln and relays each to target.
func proxy(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer u.Close()
			go io.Copy(u, c)
			io.Copy(c, u)
		}()
	}
}

func TestStartup_WaitsForADatabaseThatComesUpLate(t *testing.T) {
	var mysqlBackend *dbtest.Backend
	for _, b := range dbtest.Backends(t) {
		if b.Name == config.DriverMySQL {
			mysqlBackend = &b
		}
	}
	if mysqlBackend == nil {
		t.Skip("needs MySQL: set " + dbtest.EnvMySQLDSN)
	}
	mc, err := mysql.ParseDSN(mysqlBackend.Config(t).DBDSN)
	if err != nil {
		t.Fatal(err)
	}
	target := mc.Addr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mc.Addr = ln.Addr().String()
	ln.Close() // the database is not there yet

	cmd := exec.Command(binary, "migrate")
	cmd.Env = append(os.Environ(), "PERSONNEL_LOG_FORMAT=json", "PERSONNEL_DB_DRIVER=mysql",
		"PERSONNEL_DB_DSN="+mc.FormatDSN(), "PERSONNEL_DB_WAIT=60s")
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	attempts := 0
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "trying again") {
			continue
		}
		// The database comes up once the command has found it missing twice.
		if attempts++; attempts == 2 {
			late, err := net.Listen("tcp", mc.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer late.Close()
			go proxy(late, target)
		}
	}
	if err := cmd.Wait(); err != nil || attempts < 2 || !strings.Contains(stdout.String(), "up to date") {
		t.Fatalf("migrate against a late database: %v after %d attempts; stdout %q", err, attempts, stdout.String())
	}
}
