package main

import (
	"context"
	"database/sql"
	"fmt"
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

	"personnel/db/dbtest"
)

// employeeEntry is the resource the end-to-end test adds first, exactly as
// an operator would: the README's employee, with references to the
// shipped departments, positions and areas, under names no user would
// pick (a user's own employee may be in the list already).
const employeeEntry = `
  - name: e2e_employee
    path: e2e-employees
    table: personnel_e2e_employee
    fields:
      code: emp_code
      name: first_name
    extra:
      - name: last_name
        type: string
        max_length: 100
        filters: [exact, icontains]
      - name: department
        type: ref            # one record of another resource
        to: department
        required: true
        on_delete: protect   # protect (default) | set_null | cascade
        filters: [exact, in, isnull, under]
      - name: position
        type: ref
        to: position
        on_delete: set_null
        filters: [exact, isnull]
      - name: area
        type: refs           # several records of another resource
        to: area
        filters: [exact, in]
`

// laterEntries are what the test then adds: typed extra fields of every
// type, and a reference, on the employees already stored; and a
// hierarchical resource whose references cascade, protect a list, and
// refer to its own records.
const laterEntries = `      - name: level
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
      - name: home_area
        type: ref
        to: area
        on_delete: set_null
        filters: [exact, isnull, under]
        ordering: true

  - name: e2e_cost_centre
    path: e2e-cost-centres
    table: personnel_e2e_cost_centre
    fields:
      code: cc_code
      name: cc_name
      parent: parent_cc
    extra:
      - name: department
        type: ref
        to: department
        on_delete: cascade
        filters: [exact, in, isnull, under]
        ordering: true
      - name: manager
        type: ref
        to: e2e_employee
        on_delete: set_null
        filters: [exact, isnull]
      - name: staff
        type: refs
        to: e2e_employee
        on_delete: protect
        filters: [exact, in, isnull]
      - name: regions
        type: refs
        to: area
        filters: [exact, in, isnull, under]
      - name: twin
        type: ref
        to: e2e_cost_centre
        on_delete: set_null
        filters: [exact]
      - name: partners
        type: refs
        to: e2e_cost_centre
        filters: [exact]
`

// TestEndToEnd_AResourceAddedByConfigPassesTheContract runs the real
// generator on a copy of the module with the README's employee (renamed)
// added to config/resources.yaml, builds it and fills it with records;
// then adds typed extra fields of every type and a reference to the
// filled employees, and a hierarchical resource with references of every
// rule, generates again, checks that the start-up migration added the new
// columns to the filled table (with the default where there is one), and
// runs the HTTP contract tests and the store's search test, which run over
// every compiled resource, against both on SQLite, the tests of extra
// fields and references on every backend (references with the TiDB
// flavour too), and the admin UI's test of every resource's fields in a
// browser.
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
	appendResources(t, dir, employeeEntry)

	// Built before generating, the binary refuses to start and says why.
	out, err := goCmd(t, dir, nil, "run", "./cmd/personnel", "migrate")
	if err == nil || !strings.Contains(out, "run `go generate ./...` and rebuild") {
		t.Fatalf("a stale build started (or said something else): %v\n%s", err, out)
	}

	if out, err := goCmd(t, dir, nil, "generate", "./..."); err != nil {
		t.Fatalf("go generate: %v\n%s", err, out)
	}
	for _, generated := range []string{"ent/schema/e2e_employee.go", "ent/e2eemployee.go", "ent/e2eemployee/e2eemployee.go", "ent/e2eemployeearea.go"} {
		if _, err := os.Stat(filepath.Join(dir, generated)); err != nil {
			t.Fatalf("go generate did not write %s", generated)
		}
	}
	filled := []string{"PERSONNEL_DB_DSN=" + filepath.Join(t.TempDir(), "p.db")}
	if out, err := goCmd(t, dir, filled, "run", "./cmd/personnel", "seed", "--resource", "e2e_employee", "--count", "20"); err != nil {
		t.Fatalf("the regenerated binary does not seed: %v\n%s", err, out)
	}

	// Extra fields and a reference on the filled table, and a resource
	// whose references cascade, protect and refer to itself.
	appendResources(t, dir, laterEntries)
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

	// The contract tests on SQLite: the generated resources run the same
	// generic code on every backend, and this package's caller runs that
	// code on every backend already. The tests of what only a generated
	// resource has, its extra fields and references, run on every backend
	// the caller's suite runs against, and so does the store's search
	// test, which runs every plan of a search over every searched field of
	// every resource (the extra description among them); those of
	// references run again with the TiDB flavour forced on MySQL.
	sqliteOnly := []string{"CI=false", dbtest.EnvMySQLDSN + "=", dbtest.EnvPostgresDSN + "="}
	out, err = goCmd(t, dir, sqliteOnly, "test", "-count=1", "-v", "-timeout", "30m", "./server/", "./resource/")
	if err != nil {
		t.Fatalf("contract tests in the copy: %v\n%s", err, failures(out))
	}
	everyBackend, err := goCmd(t, dir, nil, "test", "-count=1", "-v", "-timeout", "30m", "-run", "^(TestRef_|TestExtra_|TestSearch_)", "./server/", "./resource/")
	if err != nil {
		t.Fatalf("the tests of extra fields and references in the copy: %v\n%s", err, failures(everyBackend))
	}
	out += everyBackend
	backends := []string{"sqlite"}
	if os.Getenv(dbtest.EnvMySQLDSN) != "" {
		backends = append(backends, "mysql")
		tidb := []string{"CI=false", dbtest.EnvPostgresDSN + "=", dbtest.EnvMySQLFlavor + "=tidb"}
		tidbOut, err := goCmd(t, dir, tidb, "test", "-count=1", "-v", "-timeout", "30m", "-run", "^TestRef_/mysql$", "./server/")
		if err != nil {
			t.Fatalf("the tests of references in the copy, TiDB flavour: %v\n%s", err, failures(tidbOut))
		}
		if !strings.Contains(tidbOut, "--- PASS: TestRef_ADeleteRacingACreateThatRefersToItNeverLeavesADanglingReference/mysql/e2e_employee.department ") {
			t.Errorf("the tests of references did not run on MySQL with the TiDB flavour:\n%s", tail(tidbOut, 40))
		}
	}
	if os.Getenv(dbtest.EnvPostgresDSN) != "" {
		backends = append(backends, "postgres")
	}
	// Every contract test that ran for departments must have passed for
	// the hierarchical cost centres too, on every backend, and every one
	// that is not about the hierarchy for the flat employees; the tests
	// of extra fields and of references must have run.
	pass := regexp.MustCompile(`--- PASS: (Test\w+)/(\w+)/(department|e2e_employee|e2e_cost_centre)(\.\w+)? `)
	ran := map[string]map[string]bool{"department": {}, "e2e_employee": {}, "e2e_cost_centre": {}}
	for _, m := range pass.FindAllStringSubmatch(out, -1) {
		ran[m[3]][m[1]+"/"+m[2]+m[4]] = true
	}
	if len(ran["department"]) < 20 {
		t.Fatalf("only %d contract tests ran for departments:\n%s", len(ran["department"]), tail(out, 40))
	}
	for test := range ran["department"] {
		if !ran["e2e_cost_centre"][test] {
			t.Errorf("%s passed for departments but not for cost centres", test)
		}
	}
	if len(ran["e2e_employee"]) < len(ran["department"])/2 {
		t.Errorf("only %d contract tests passed for employees, against %d for departments", len(ran["e2e_employee"]), len(ran["department"]))
	}
	for _, backend := range backends {
		for _, test := range []string{"TestExtra_ValuesAreStoredAndRenderedByType", "TestExtra_FiltersSelectByValueInBothSpellings", "TestExtra_OrderingSortsByTheFieldThenID",
			"TestSearch_EveryPlanGivesTheAnswerOfAFilterOverEveryRecord"} {
			if !ran["e2e_employee"][test+"/"+backend] {
				t.Errorf("%s did not pass for employees on %s", test, backend)
			}
		}
		for _, test := range []string{
			"TestRef_WritesTakeIdsAndReadsShowThem/%s.area", "TestRef_UnknownOrMalformedIdsAre400InDjangoRESTFrameworksWords/%s.department",
			"TestRef_ExpandShowsTheReferencedRecordsInEveryRead/%s.position", "TestRef_ExpandCostsOneStatementPerPage/%s.area",
			"TestRef_FiltersSelectByIdListNullAndTheTargetsCodeAndName/%s.department", "TestRef_UnderSelectsTheRecordsOfASubtreeAsAWalkInGoDoes/%s.department",
			"TestRef_DeletingAReferencedRecordFollowsTheFieldsRule/%s.position", "TestRef_ADeleteRacingACreateThatRefersToItNeverLeavesADanglingReference/%s.department",
			"TestRef_OrderingByTheIdAndByTheTargetsName/%s.home_area", "TestRef_TheOpenAPIDocumentTypesReferences/%s.area",
			"TestRef_KeepersSeeAChangedReferenceAsAChangeOfTheField/%s.position", "TestRef_AChangedReferenceIsAChangeOfTheRecord/%s.area",
			"TestRef_FilesCarryReferencesByTheirCodes/%s.department", "TestRef_FilesCarryReferencesByTheirCodes/%s.area",
			"TestRef_CodesHoldingTheSeparatorOrABackslashRoundTripInEveryFormat/%s.area",
		} {
			if test = fmt.Sprintf(test, backend); !ran["e2e_employee"][test] {
				t.Errorf("%s did not pass for employees", test)
			}
		}
		for _, test := range []string{"TestRef_ACascadeThroughAHierarchyGoesFromTheLeavesOrNotAtAll/%s.department",
			"TestRef_DeletingAReferencedRecordFollowsTheFieldsRule/%s.staff", "TestRef_UnknownOrMalformedIdsAre400InDjangoRESTFrameworksWords/%s.twin",
			"TestRef_FilesCarryReferencesByTheirCodes/%s.partners", "TestRef_CodesHoldingTheSeparatorOrABackslashRoundTripInEveryFormat/%s.partners",
			"TestRef_AFileMayReferToRecordsItCreates/%s.twin", "TestRef_AFileMayReferToRecordsItCreates/%s.partners",
			"TestRef_AFileRowThatNamesItselfIsRefusedAsTheAPIRefusesIt/%s.twin"} {
			if test = fmt.Sprintf(test, backend); !ran["e2e_cost_centre"][test] {
				t.Errorf("%s did not pass for cost centres", test)
			}
		}
	}
	t.Logf("%d contract tests passed for employees, %d for cost centres", len(ran["e2e_employee"]), len(ran["e2e_cost_centre"]))

	// The admin UI shows both, each field with its own kind of input and
	// each filter with a control, with no code of their own; its pickers
	// of references choose, save, list and filter by them.
	out, err = goCmd(t, dir, nil, "test", "-count=1", "-v", "-run", "^("+adminFieldsTest+"|"+adminRefTest+"|"+adminRefsTest+"|"+adminRefFilterTest+"|"+adminRefInFilterTest+")$", "./web/")
	if err != nil {
		t.Fatalf("the admin UI's test in the copy: %v\n%s", err, failures(out))
	}
	if strings.Contains(out, "browser test skipped") {
		t.Logf("the admin UI was not checked: %s", tail(out, 5))
		return
	}
	for _, r := range []string{"e2e_employee", "e2e_cost_centre"} {
		if !regexp.MustCompile(`--- PASS: ` + adminFieldsTest + `/\w+/` + r + ` `).MatchString(out) {
			t.Errorf("the admin UI's test did not pass for %s:\n%s", r, tail(out, 40))
		}
	}
	for _, test := range []string{adminRefTest + "/sqlite/e2e_employee.department", adminRefTest + "/sqlite/e2e_employee.position",
		adminRefTest + "/sqlite/e2e_cost_centre.twin", adminRefsTest + "/sqlite/e2e_employee.area", adminRefsTest + "/sqlite/e2e_cost_centre.staff",
		adminRefFilterTest + "/sqlite/e2e_employee.department", adminRefFilterTest + "/sqlite/e2e_cost_centre.regions",
		adminRefInFilterTest + "/sqlite/e2e_employee.department", adminRefInFilterTest + "/sqlite/e2e_cost_centre.staff"} {
		if !strings.Contains(out, "--- PASS: "+test+" ") {
			t.Errorf("%s did not pass:\n%s", test, tail(out, 40))
		}
	}
	t.Logf("the admin UI showed employees and cost centres with their fields and filters, picked their references and filtered by them")
}

// adminFieldsTest is the browser test that holds every compiled resource's
// page in the admin UI to its fields and filters.
const adminFieldsTest = "TestAdmin_EveryResourceShowsItsFieldsWithTheirInputs"

// adminRefTest and adminRefsTest are the browser tests of the pickers of
// a ref and of a refs field, and adminRefFilterTest and
// adminRefInFilterTest of the table's filters of them, which run over
// every compiled reference.
const (
	adminRefTest         = "TestAdmin_ARefIsChosenWithThePickerSavedAsItsIdAndListedByName"
	adminRefsTest        = "TestAdmin_RefsAddTwoRemoveOneAndListThemByName"
	adminRefFilterTest   = "TestAdmin_AReferenceFilterIsARecordChosenByNameAndFiltersByItsId"
	adminRefInFilterTest = "TestAdmin_AReferencesOneOfFilterTakesSeveralRecordsAsChips"
)

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

// checkMigrated checks the employees seeded before the extra fields
// existed: each got the default of active and null for the others, the
// new reference too, and kept what it had (its substring index rows).
func checkMigrated(t *testing.T, path string) {
	t.Helper()
	d, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var total, defaulted, indexed int
	err = d.QueryRow("SELECT COUNT(*), COUNT(CASE WHEN active = 1 AND level IS NULL AND description IS NULL AND grade IS NULL AND valid_from IS NULL AND home_area_id IS NULL THEN 1 END), "+
		"(SELECT COUNT(DISTINCT id) FROM personnel_e2e_employee_emp_code_fold_substr) FROM personnel_e2e_employee").
		Scan(&total, &defaulted, &indexed)
	if err != nil || total != 20 || defaulted != 20 || indexed != 20 {
		t.Fatalf("after migrating 20 employees: %d rows, %d with the defaults, %d indexed (%v)", total, defaulted, indexed, err)
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
