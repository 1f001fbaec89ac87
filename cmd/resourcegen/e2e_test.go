package main

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// positionEntry is the resource the end-to-end test adds first, exactly as
// an operator would.
const positionEntry = `
  - name: position
    path: positions
    table: personnel_position
    fields:
      code: position_code
      name: position_name
      parent: parent_position
`

// extraEntries are what the test then adds: typed extra fields of every
// type on positions (as the README shows them), and a flat resource.
const extraEntries = `    extra:
      - name: level
        type: integer
        min: 0
        max: 100
        filters: [exact, gte, lte]
        ordering: true
      - name: description
        type: string
        max_length: 500
        filters: [exact, icontains]
      - name: active
        type: boolean
        default: true
        filters: [exact]
      - name: grade
        type: choice
        choices: [junior, senior, lead]
        required: true
        filters: [exact]
      - name: valid_from
        type: date
        filters: [exact, gte, lte, isnull]
        ordering: true

  - name: leave_type
    path: leave-types
    table: personnel_leave_type
    fields:
      code: leave_code
      name: leave_name
    extra:
      - name: paid
        type: boolean
        default: true
        filters: [exact]
`

// TestEndToEnd_AResourceAddedByConfigPassesTheContract runs the real
// generator on a copy of the module with a position entry added to
// config/resources.yaml, builds it and fills it with records; then adds
// typed extra fields to positions and a flat leave_type resource,
// generates again, checks that the start-up migration added the new
// columns to the filled table (with the default where there is one), and
// runs the HTTP contract tests and the store's search test, which run
// over every compiled resource, against both, and the admin UI's test of
// every resource's fields in a browser.
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
	appendResources(t, dir, positionEntry)

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
	filled := []string{"PERSONNEL_DB_DSN=" + filepath.Join(t.TempDir(), "p.db")}
	if out, err := goCmd(t, dir, filled, "run", "./cmd/personnel", "seed", "--resource", "position", "--count", "20"); err != nil {
		t.Fatalf("the regenerated binary does not seed: %v\n%s", err, out)
	}

	// Extra fields on the filled table, and a flat resource.
	appendResources(t, dir, extraEntries)
	if out, err := goCmd(t, dir, nil, "generate", "./..."); err != nil {
		t.Fatalf("go generate with extra fields: %v\n%s", err, out)
	}
	if out, err := goCmd(t, dir, nil, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the generated code: %v\n%s", err, out)
	}
	if out, err := goCmd(t, dir, filled, "run", "./cmd/personnel", "migrate"); err != nil {
		t.Fatalf("the regenerated binary does not migrate the filled table: %v\n%s", err, out)
	}
	checkMigrated(t, filled[0][len("PERSONNEL_DB_DSN="):])

	// The contract tests, and the store's search test, which runs every
	// plan of a search over every searched field of every resource (the
	// extra description among them).
	out, err = goCmd(t, dir, nil, "test", "-count=1", "-v", "-timeout", "30m", "./server/", "./resource/")
	if err != nil {
		t.Fatalf("contract tests in the copy: %v\n%s", err, failures(out))
	}
	// Every contract test that ran for departments must have passed for
	// positions too, on every backend, and every one that is not about the
	// hierarchy for leave types; the extra-field tests must have run.
	pass := regexp.MustCompile(`--- PASS: (Test\w+)/(\w+)/(department|position|leave_type) `)
	ran := map[string]map[string]bool{"department": {}, "position": {}, "leave_type": {}}
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
	if len(ran["leave_type"]) < len(ran["department"])/2 {
		t.Errorf("only %d contract tests passed for leave types, against %d for departments", len(ran["leave_type"]), len(ran["department"]))
	}
	for _, test := range []string{"TestExtra_ValuesAreStoredAndRenderedByType", "TestExtra_FiltersSelectByValueInBothSpellings", "TestExtra_OrderingSortsByTheFieldThenID"} {
		for _, r := range []string{"position", "leave_type"} {
			if !ran[r][test+"/sqlite"] {
				t.Errorf("%s did not pass for %s", test, r)
			}
		}
	}
	t.Logf("%d contract tests passed for positions, %d for leave types", len(ran["position"]), len(ran["leave_type"]))

	// The admin UI shows both, each field with its own kind of input and
	// each filter with a control, with no code of their own.
	out, err = goCmd(t, dir, nil, "test", "-count=1", "-v", "-run", "^"+adminFieldsTest+"$", "./web/")
	if err != nil {
		t.Fatalf("the admin UI's test in the copy: %v\n%s", err, failures(out))
	}
	if strings.Contains(out, "browser test skipped") {
		t.Logf("the admin UI was not checked: %s", tail(out, 5))
		return
	}
	for _, r := range []string{"position", "leave_type"} {
		if !regexp.MustCompile(`--- PASS: ` + adminFieldsTest + `/\w+/` + r + ` `).MatchString(out) {
			t.Errorf("the admin UI's test did not pass for %s:\n%s", r, tail(out, 40))
		}
	}
	t.Logf("the admin UI showed positions and leave types with their fields and filters")
}

// adminFieldsTest is the browser test that holds every compiled resource's
// page in the admin UI to its fields and filters.
const adminFieldsTest = "TestAdmin_EveryResourceShowsItsFieldsWithTheirInputs"

// appendResources adds entries to the copy's config/resources.yaml.
func appendResources(t *testing.T, dir, entries string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "config", "resources.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(entries); err != nil {
		t.Fatal(err)
	}
}

// checkMigrated checks the positions seeded before the extra fields
// existed: each got the default of active and null for the others.
func checkMigrated(t *testing.T, path string) {
	t.Helper()
	d, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var total, defaulted int
	err = d.QueryRow("SELECT COUNT(*), COUNT(CASE WHEN active = 1 AND level IS NULL AND description IS NULL AND grade IS NULL AND valid_from IS NULL THEN 1 END) FROM personnel_position").
		Scan(&total, &defaulted)
	if err != nil || total != 20 || defaulted != 20 {
		t.Fatalf("after migrating 20 positions: %d rows, %d with the defaults (%v)", total, defaulted, err)
	}
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
	// The copy's own tests take most of this package's time: the command
	// may use all of it but a margin to report what it printed.
	deadline := time.Now().Add(8 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	// At the deadline the whole group goes, not only the go command: the
	// test binaries it started would otherwise run on, orphaned, and slow
	// every package tested after.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// failures returns the lines of go test's output that say what failed.
func failures(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "FAIL") || strings.Contains(l, "panic") || strings.Contains(l, "_test.go:") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 100 {
		lines = lines[:100]
	}
	return strings.Join(lines, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
