package main

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// positionEntry is the resource the end-to-end test adds, exactly as an
// operator would.
const positionEntry = `
  - name: position
    path: positions
    table: personnel_position
    fields:
      code: position_code
      name: position_name
      parent: parent_position
`

// TestEndToEnd_AResourceAddedByConfigPassesTheContract runs the real
// generator on a copy of the module with a position entry added to
// config/resources.yaml, builds it, and runs the HTTP contract tests, which
// run over every compiled resource, against /personnel/api/positions/.
func TestEndToEnd_AResourceAddedByConfigPassesTheContract(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, builds and tests a copy of the module")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyModule(t, root, dir)
	f, err := os.OpenFile(filepath.Join(dir, "config", "resources.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(positionEntry)
	f.Close()

	// Built before generating, the binary refuses to start and says why.
	out, err := goCmd(t, dir, nil, "run", "./cmd/personnel", "migrate")
	if err == nil || !strings.Contains(out, "run `go generate ./...` and rebuild") {
		t.Fatalf("a stale build started (or said something else): %v\n%s", err, out)
	}

	if out, err := goCmd(t, dir, nil, "generate", "./..."); err != nil {
		t.Fatalf("go generate: %v\n%s", err, out)
	}
	for _, generated := range []string{"ent/schema/position.go", "ent/position.go", "ent/position/position.go"} {
		if _, err := os.Stat(filepath.Join(dir, generated)); err != nil {
			t.Fatalf("go generate did not write %s", generated)
		}
	}
	if out, err := goCmd(t, dir, nil, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the generated code: %v\n%s", err, out)
	}
	if out, err := goCmd(t, dir, []string{"PERSONNEL_DB_DSN=" + filepath.Join(t.TempDir(), "p.db")}, "run", "./cmd/personnel", "migrate"); err != nil {
		t.Fatalf("the regenerated binary does not start: %v\n%s", err, out)
	}

	out, err = goCmd(t, dir, nil, "test", "-count=1", "-v", "./server/")
	if err != nil {
		t.Fatalf("contract tests in the copy: %v\n%s", err, tail(out, 60))
	}
	// Every contract test that ran for departments must have passed for
	// positions too, on every backend.
	pass := regexp.MustCompile(`--- PASS: (Test\w+)/(\w+)/(department|position) `)
	ran := map[string]map[string]bool{"department": {}, "position": {}}
	for _, m := range pass.FindAllStringSubmatch(out, -1) {
		ran[m[3]][m[1]+"/"+m[2]] = true
	}
	if len(ran["department"]) < 20 {
		t.Fatalf("only %d contract tests ran for departments:\n%s", len(ran["department"]), tail(out, 40))
	}
	for test := range ran["department"] {
		if !ran["position"][test] {
			t.Errorf("%s passed for departments but not for positions", test)
		}
	}
	t.Logf("%d contract tests passed for positions", len(ran["position"]))
}

// copyModule copies the module at src to dst, leaving out version control
// and local databases.
func copyModule(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		for _, skip := range []string{".db", ".db-wal", ".db-shm", ".prof", ".test"} {
			if strings.HasSuffix(path, skip) {
				return nil
			}
		}
		if !d.Type().IsRegular() || rel == "personnel" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying the module: %v", err)
	}
}

// goCmd runs the go command in dir with the test's environment plus env.
func goCmd(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
