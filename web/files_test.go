package web_test

// The admin UI's export buttons and import pane, against the real
// export/ and import/ of the service.

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"personnel/config"
	"personnel/server"
)

// openDownloading opens a tab in a browser context of its own whose
// downloads are saved, under the names the pages give them, in dir.
func (s *site) openDownloading(t *testing.T, dir string) *tab {
	t.Helper()
	tb := s.open(t, chromedp.WithNewBrowserContext())
	if _, err := chromedp.CallBrowser(tb.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior:         cdpbrowser.SetDownloadBehaviorBehaviorAllow,
		BrowserContextID: chromedp.FromContext(tb.ctx).BrowserContextID,
		DownloadPath:     dir,
	}); err != nil {
		t.Fatalf("saving downloads in %s: %v", dir, err)
	}
	return tb
}

// downloaded waits for the one file downloaded into dir to be complete
// and returns its name and content.
func downloaded(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 1 && !strings.HasSuffix(entries[0].Name(), ".crdownload") {
			data, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
			if err != nil {
				t.Fatal(err)
			}
			return entries[0].Name(), data
		}
		if time.Now().After(deadline) {
			t.Fatalf("no download completed in %s: %v", dir, entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// importFile writes a CSV file of rows of r (code, name, and the parent's
// code when r is hierarchical) with the required extra fields, and returns
// its path. extra adds a column of that name, empty in every row.
func (s *site) importFile(t *testing.T, r res, name string, rows [][3]string, extra ...string) string {
	t.Helper()
	header := []string{r.Fields.Code, r.Fields.Name}
	if r.Hierarchical() {
		header = append(header, r.Fields.Parent+"_code")
	}
	var required []config.ExtraField
	for _, e := range r.Extra {
		if e.Required {
			required = append(required, e)
			header = append(header, e.Name)
		}
	}
	header = append(header, extra...)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(header)
	for _, row := range rows {
		line := []string{row[0], row[1]}
		if r.Hierarchical() {
			line = append(line, row[2])
		}
		for _, e := range required {
			switch e.Type {
			case config.TypeRef, config.TypeRefs:
				line = append(line, fmt.Sprint(s.target(e.To)))
			default:
				line = append(line, fmt.Sprint(sample(e)))
			}
		}
		for range extra {
			line = append(line, "")
		}
		_ = w.Write(line)
	}
	w.Flush()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// chooseFile sets the import pane's file input to the file at path, as
// choosing it in the browser's dialog does.
func (tb *tab) chooseFile(path string) {
	tb.t.Helper()
	tb.run("choosing "+path, chromedp.SetUploadFiles(chromedp.CSS(`.detail-pane input[type=file]`), []string{path}, chromedp.NodeVisible))
}

// countOf returns how many records of r have the code, through the API.
func (s *site) countOf(r res, code string) int {
	s.t.Helper()
	var page struct{ Count int }
	s.mustJSON(s.call(http.MethodGet, fmt.Sprintf("%s/%s/?%s=%s", server.APIRoot, r.Path, r.Fields.Code, url.QueryEscape(code)), nil), http.StatusOK, &page)
	return page.Count
}

// idOf returns the id of r's record with the code, through the API.
func (s *site) idOf(r res, code string) int {
	s.t.Helper()
	var page struct{ Data []struct{ ID int } }
	s.mustJSON(s.call(http.MethodGet, fmt.Sprintf("%s/%s/?%s=%s", server.APIRoot, r.Path, r.Fields.Code, url.QueryEscape(code)), nil), http.StatusOK, &page)
	if len(page.Data) != 1 {
		s.t.Fatalf("%d records with the code %s", len(page.Data), code)
	}
	return page.Data[0].ID
}

func TestAdmin_ExportDownloadsTheTablesFilteredRowsAsTheServiceWritesThem(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		s.sampleTree(r)
		dir := t.TempDir()
		tb := s.openDownloading(t, dir)
		tb.signIn(viewerName) // viewers may export
		tb.goTo("#/" + r.Path + "/table")
		tb.waitText(".list-pane td", "Northern plant")
		tb.typeInto(fmt.Sprintf(`.list-pane [data-param=%q]`, r.Fields.Name+"_icontains"), "plant")
		sort := fmt.Sprintf(`//th/button[starts-with(normalize-space(), %s)]`, xpathString(humanize(r.Fields.Name)))
		tb.click(sort)
		tb.waitFor("the ascending order", `document.querySelector('th[aria-sort="ascending"]') !== null`)
		tb.click(sort) // descending
		tb.waitFor("the table filtered and ordered", `[...document.querySelectorAll(".list-pane tbody tr")].map((tr) => tr.textContent).join("|").match(/Southern.*\|.*Northern/) !== null && document.querySelectorAll(".list-pane tbody tr").length === 2`)

		tb.click(button("Export CSV"))
		name, got := downloaded(t, dir)
		tb.waitText(".file-messages [role=status]", "Downloaded "+name)
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(r.Path) + `-\d{8}\.csv$`).MatchString(name) {
			t.Errorf("the file is named %q, want the service's %s-<date>.csv", name, r.Path)
		}
		want := s.call(http.MethodGet, fmt.Sprintf("%s/%s/export/?format=csv&%s_icontains=plant&ordering=-%s", server.APIRoot, r.Path, r.Fields.Name, r.Fields.Name), nil)
		if want.status != http.StatusOK {
			t.Fatalf("the export through the API answered %d %s", want.status, want.body)
		}
		if !bytes.Equal(got, want.body) {
			t.Errorf("the downloaded file is\n%s\nthe service's export of the same filter and ordering is\n%s", got, want.body)
		}
		header := fmt.Sprintf("id,%s,%s,", r.Fields.Code, r.Fields.Name)
		if lines := strings.Split(strings.TrimSpace(string(got)), "\n"); !strings.HasPrefix(string(got), header) || len(lines) != 3 ||
			strings.Index(string(got), "Southern plant") > strings.Index(string(got), "Northern plant") {
			t.Errorf("the file is not the header %q then the southern and the northern plant:\n%s", header, got)
		}
	})
}

func TestAdmin_AnImportsDryRunShowsEachBadRowByNumberAndWritesNothing(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		file := s.importFile(t, r, "bad.csv", [][3]string{
			{"IMPOK", "Fine", ""},
			{"IMPBLANK", "", ""},              // row 3: no name
			{"IMPORPHAN", "Orphan", "NOSUCH"}, // row 4: a parent found nowhere
		})
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/table")
		tb.click(button("Import"))
		tb.waitText(".detail-pane h2", "Import "+strings.ToLower(r.title()))
		tb.chooseFile(file)
		tb.click(button("Check the file"))
		tb.waitText(".detail-pane .row-errors caption", "2 rows with errors")
		lines := eval[[][]string](tb, `[...document.querySelectorAll(".detail-pane .row-errors tbody tr")].map((tr) => [...tr.cells].map((td) => td.textContent))`)
		if len(lines) != 2 || lines[0][0] != "3" || lines[0][1] != r.Fields.Name || !strings.Contains(lines[0][2], "blank") ||
			lines[1][0] != "4" || lines[1][1] != r.Fields.Parent+"_code" || !strings.Contains(lines[1][2], "NOSUCH") {
			t.Errorf("the row errors read %q, want row 3's blank %s and row 4's missing parent NOSUCH", lines, r.Fields.Name)
		}
		tb.waitText(".detail-pane [role=alert]", "nothing would be imported")
		if n := tb.count(".detail-pane [data-count]"); n != 0 {
			t.Errorf("a dry run with bad rows shows %d counts, which the service stopped short", n)
		}
		if n := eval[int](tb, `[...document.querySelectorAll(".detail-pane button")].filter((b) => b.checkVisibility()).length`); n != 1 {
			t.Errorf("%d buttons shown after a dry run with bad rows, want only the check (no confirm)", n)
		}
		tb.checkAccessibility(t, "an import's dry run with bad rows")
		for _, code := range []string{"IMPOK", "IMPBLANK", "IMPORPHAN"} {
			if n := s.countOf(r, code); n != 0 {
				t.Errorf("after the dry run there are %d records %s", n, code)
			}
		}
	})
}

func TestAdmin_AValidFilesDryRunThenConfirmImportsItAndRedrawsTheTable(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		s.add(r, "IMPOLD", "Old name", nil)
		file := s.importFile(t, r, "good.csv", [][3]string{
			{"IMPCHILD", "Imported child", "IMPTOP"}, // its parent is a row below
			{"IMPTOP", "Imported top", ""},
			{"IMPOLD", "New name", ""},
		})
		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo("#/" + r.Path + "/table/import")
		tb.waitText(".detail-pane h2", "Import "+strings.ToLower(r.title()))
		tb.chooseFile(file)
		tb.click(button("Check the file"))
		tb.waitText(".detail-pane .notice", "The file is valid")
		counts := func() map[string]string {
			return eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll(".detail-pane [data-count]")].map((d) => [d.dataset.count, d.textContent]))`)
		}
		if got := counts(); got["created"] != "2" || got["updated"] != "1" || got["unchanged"] != "0" || got["deleted"] != "0" {
			t.Errorf("the dry run's counts are %v, want 2 to create and 1 to update", got)
		}
		if n := s.countOf(r, "IMPTOP"); n != 0 {
			t.Fatalf("the dry run wrote %d records", n)
		}
		tb.checkAccessibility(t, "an import's clean dry run")

		tb.click(button("Confirm import"))
		tb.waitText(".detail-pane .notice", "Imported: 2 created, 1 updated, 0 unchanged, 0 deleted.")
		top, child := s.idOf(r, "IMPTOP"), s.idOf(r, "IMPCHILD")
		if got := s.record(r.Path, child)[r.Fields.Parent]; got != float64(top) {
			t.Errorf("the child's parent is %v, want the imported top %d", got, top)
		}
		if got := s.record(r.Path, s.idOf(r, "IMPOLD"))[r.Fields.Name]; got != "New name" {
			t.Errorf("the updated record's name is %v", got)
		}
		tb.waitText(".list-pane td", "Imported child")
		tb.waitText(".list-pane td", "New name")
		if n := eval[int](tb, `[...document.querySelectorAll(".detail-pane button")].filter((b) => b.checkVisibility()).length`); n != 1 {
			t.Errorf("%d buttons shown after the import, want only the check (the confirm is spent)", n)
		}
	})
}

func TestAdmin_AnImportOfAFileTheServiceRefusesWholeShowsItsMessage(t *testing.T) {
	r := treeRes(t)
	cases := []struct {
		name   string
		extra  []string // columns the file adds
		limit  int64    // PERSONNEL_IMPORT_LIMIT, 0 for the default
		answer string
	}{
		{name: "unknown_column", extra: []string{"no_such_column"}, answer: `Unknown columns: "no_such_column".`},
		{name: "too_large", limit: 16, answer: "The file is larger than 16 bytes."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s *site) {
				file := s.importFile(t, r, c.name+".csv", [][3]string{{"IMPODD", "Odd", ""}}, c.extra...)
				tb := s.open(t)
				tb.signIn(editorName)
				tb.goTo("#/" + r.Path + "/table/import")
				tb.chooseFile(file)
				tb.click(button("Check the file"))
				tb.waitText(".detail-pane [role=alert]", c.answer)
				if n := tb.count(".detail-pane .row-errors"); n != 0 {
					t.Errorf("a file refused whole shows %d tables of row errors", n)
				}
				if n := s.countOf(r, "IMPODD"); n != 0 {
					t.Errorf("a file refused whole wrote %d records", n)
				}
			}, siteOption{config: func(cfg *config.Config) {
				if c.limit > 0 {
					cfg.ImportLimit = c.limit
				}
			}})
		})
	}
}

func TestAdmin_AViewerMayExportButIsOfferedNoImport(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		tb := s.open(t)
		tb.signIn(viewerName)
		for _, view := range []string{"table", "tree"} {
			tb.goTo(fmt.Sprintf("#/%s/%s", r.Path, view))
			tb.waitText(".page-head", "Export CSV")
			if n := eval[int](tb, `[...document.querySelectorAll("main a, main button, main input[type=file]")].filter((e) => e.type === "file" || /Import/.test(e.textContent)).length`); n != 0 {
				t.Errorf("%s view: the viewer is offered %d import controls", view, n)
			}
		}
		tb.goTo("#/" + r.Path + "/table/import")
		tb.waitText(".detail-pane", "Choose a "+r.singular())
		if n := tb.count(".detail-pane form, .detail-pane input"); n != 0 {
			t.Errorf("asked for the import, the viewer got %d forms and inputs", n)
		}
	})
}
