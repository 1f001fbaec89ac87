package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"personnel/server"
)

// export writes a file that import takes back unchanged, in every format;
// a refused file exits 1 with its bad rows and writes nothing.
func TestCLI_ExportThenImportChangesNothing(t *testing.T) {
	r := server.CompiledResources()[0]
	dir := t.TempDir()
	dsn := "PERSONNEL_DB_DSN=" + filepath.Join(dir, "io.db")
	if out, errOut, code := runBinary(t, []string{dsn}, "seed", "--count", "50", "--resource", r.Path); code != 0 {
		t.Fatalf("seed: exit %d, %s%s", code, out, errOut)
	}
	for _, ext := range []string{"csv", "xlsx", "json"} {
		file := filepath.Join(dir, r.Path+"."+ext)
		if out, errOut, code := runBinary(t, []string{dsn}, "export", "--resource", r.Name, "--output", file); code != 0 {
			t.Fatalf("export %s: exit %d, %s%s", ext, code, out, errOut)
		}
		out, errOut, code := runBinary(t, []string{dsn}, "import", "--resource", r.Path, file)
		if code != 0 || !strings.Contains(out, "0 created, 0 updated, 50 unchanged, 0 deleted") {
			t.Fatalf("import %s: exit %d, %s%s", ext, code, out, errOut)
		}
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte(r.Fields.Code+","+r.Fields.Name+"\nNEW-1,Fine\nNEW-2,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBinary(t, []string{dsn}, "import", "--resource", r.Name, bad)
	if code != 1 || !strings.Contains(errOut, "row 3: "+r.Fields.Name+": This field may not be blank.") {
		t.Fatalf("bad file: exit %d, %s%s", code, out, errOut)
	}
	file := filepath.Join(dir, "after.csv")
	runBinary(t, []string{dsn}, "export", "--resource", r.Name, "--query", r.Fields.Code+"=NEW-1", file)
	if data, _ := os.ReadFile(file); strings.Contains(string(data), "NEW-1") {
		t.Fatal("a refused import wrote a record")
	}
}
