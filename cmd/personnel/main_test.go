package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
