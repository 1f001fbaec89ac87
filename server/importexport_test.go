package server_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xuri/excelize/v2"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/resource"
	"personnel/server"
)

// importResult is an import's answer.
type importResult struct {
	Created, Updated, Unchanged, Deleted int
	Rows                                 []struct {
		Row    int                 `json:"row"`
		Errors map[string][]string `json:"errors"`
	} `json:"rows"`
}

const xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

func (r res) export(q string) string { return r.coll() + "export/?" + q }
func (r res) importPath(q string) string {
	return r.coll() + "import/?" + q
}

// parentCol is the column of the parent's code.
func (r res) parentCol() string { return r.Fields.Parent + "_code" }

// importFile posts a file to the import.
func (a *api) importFile(r res, q, contentType string, data []byte) *response {
	a.t.Helper()
	req := httptest.NewRequest(http.MethodPost, r.importPath(q), bytes.NewReader(data))
	req.Header.Set("Content-Type", contentType)
	return a.serve(req)
}

// imported posts a file that must be accepted, and returns the answer.
func (a *api) imported(r res, q, contentType string, data []byte) importResult {
	a.t.Helper()
	resp := a.importFile(r, q, contentType, data)
	if resp.Status != http.StatusOK {
		a.t.Fatalf("import: %s", resp)
	}
	var res importResult
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		a.t.Fatalf("import answer: %v: %s", err, resp.Body)
	}
	return res
}

// csvOf writes rows as CSV.
func csvOf(rows ...[]string) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.WriteAll(rows)
	return b.Bytes()
}

// fileRow is a row of a file for r: code, name, parent code, and the
// required extras' samples.
func (r res) fileHeader() []string {
	h := []string{r.Fields.Code, r.Fields.Name}
	if r.Hierarchical() {
		h = append(h, r.parentCol())
	}
	for _, e := range r.Extra {
		if e.Required {
			h = append(h, e.Name)
		}
	}
	return h
}

func (r res) fileRow(code, name, parent string) []string {
	row := []string{code, name}
	if r.Hierarchical() {
		row = append(row, parent)
	}
	for _, e := range r.Extra {
		if e.Required {
			v := sample(e)
			switch x := v.(type) {
			case []any:
				v = x[0]
			}
			row = append(row, strings.Trim(fmt.Sprint(v), `"`))
		}
	}
	return row
}

// richBody is a create body with every extra field given a value, text
// that a spreadsheet would take for a formula, and unicode.
func (r res) richBody(code, name string, parent any) map[string]any {
	m := r.body(code, name, parent)
	for _, e := range r.Extra {
		if e.IsRef() {
			continue
		}
		vs := ascending(e)
		m[e.Name] = vs[len(vs)-1]
		if e.Type == config.TypeString {
			m[e.Name] = "@risky ünï"
		}
	}
	return m
}

// codes lists the codes of r's records, in id order.
func (a *api) codes(r res, q string) []string {
	a.t.Helper()
	var out []string
	for _, rec := range a.list(r, "page_size=1000&"+q).Data {
		out = append(out, rec.Code)
	}
	return out
}

// An export imported again changes nothing, in every format: formula-like
// text comes back without the apostrophe the CSV put in front of it,
// unicode is intact, and every extra field keeps its value.
func TestImport_RoundTripOfAnExportChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, format := range []string{"csv", "xlsx", "json"} {
			t.Run(format, func(t *testing.T) {
				pre := format[:1]
				var parent any
				if r.Hierarchical() {
					parent = nil
				}
				mk := func(code, name string, parent any) int {
					resp := a.do(http.MethodPost, r.coll(), r.richBody(code, name, parent))
					if resp.Status != http.StatusCreated {
						t.Fatalf("create %s: %s", code, resp)
					}
					return r.decodeRecord(t, resp.Body).ID
				}
				root := mk("=RT"+pre, "+SUM(A1) 名前 ünïcødé", parent)
				var p any
				if r.Hierarchical() {
					p = root
				}
				mk("-rt"+pre, "'quoted", p)
				mk("@rt"+pre, "plain, with \"quotes\"\nand a line", p)
				q := "search=rt" + pre
				before := a.list(r, q+"&page_size=100").Data
				resp := a.do(http.MethodGet, r.export(q+"&format="+format), nil)
				if resp.Status != http.StatusOK {
					t.Fatalf("export: %s", resp)
				}
				disp := resp.Header.Get("Content-Disposition")
				if !strings.HasPrefix(disp, `attachment; filename="`+r.Path+"-") || !strings.HasSuffix(disp, "."+format+`"`) {
					t.Fatalf("Content-Disposition %q", disp)
				}
				if format == "csv" && !bytes.Contains(resp.Body, []byte("'=RT")) {
					t.Fatalf("a formula-like code is not neutralised in the CSV:\n%s", resp.Body)
				}
				if format == "xlsx" {
					checkWorkbook(t, r, resp.Body)
				}
				ct := map[string]string{"csv": "text/csv", "xlsx": xlsxType, "json": "application/json"}[format]
				res := a.imported(r, "", ct, resp.Body)
				if res.Created != 0 || res.Updated != 0 || res.Unchanged != 3 || len(res.Rows) != 0 {
					t.Fatalf("round trip: %+v", res)
				}
				after := a.list(r, q+"&page_size=100").Data
				if len(after) != len(before) {
					t.Fatalf("%d records after, %d before", len(after), len(before))
				}
				for i := range before {
					if !before[i].equal(after[i]) {
						t.Fatalf("record changed:\n%+v\n%+v", before[i], after[i])
					}
				}
			})
		}
	})
}

// checkWorkbook reads an exported workbook back: one sheet named after
// the resource, the header, ids as numbers and formula-like text as
// strings.
func checkWorkbook(t *testing.T, r res, data []byte) {
	t.Helper()
	f, err := excelize.OpenReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the export is not a workbook: %v", err)
	}
	defer f.Close()
	if sheets := f.GetSheetList(); len(sheets) != 1 || sheets[0] != r.Path {
		t.Fatalf("sheets %q, want [%s]", sheets, r.Path)
	}
	if v, _ := f.GetCellValue(r.Path, "B1"); v != r.Fields.Code {
		t.Fatalf("B1 = %q, want %q", v, r.Fields.Code)
	}
	if typ, _ := f.GetCellType(r.Path, "A2"); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
		t.Fatalf("the id is a cell of type %v, want a number", typ)
	}
	if formula, _ := f.GetCellFormula(r.Path, "B2"); formula != "" {
		t.Fatalf("B2 is a formula %q", formula)
	}
}

// A file upserts by code, ignoring letter case: rows whose code exists
// update their record, others create one; a parent may be created by a
// row further down the file.
func TestImport_UpsertsByCodeWithParentsFurtherDown(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		existing := a.create(r, "UP-OLD", "Old name", nil)
		header := r.fileHeader()
		rows := [][]string{header}
		if r.Hierarchical() {
			rows = append(rows, r.fileRow("UP-CHILD", "Child", "up-top"), r.fileRow("UP-TOP", "Top", ""))
		} else {
			rows = append(rows, r.fileRow("UP-CHILD", "Child", ""), r.fileRow("UP-TOP", "Top", ""))
		}
		rows = append(rows, r.fileRow("up-old", "New name", ""))
		res := a.imported(r, "", "text/csv", csvOf(rows...))
		if res.Created != 2 || res.Updated != 1 || res.Unchanged != 0 {
			t.Fatalf("import: %+v", res)
		}
		rec := a.get(r, existing)
		if rec.Name != "New name" || rec.Code != "up-old" {
			t.Fatalf("updated record %+v", rec)
		}
		if r.Hierarchical() {
			child := a.list(r, r.Fields.Code+"=UP-CHILD").Data[0]
			top := a.list(r, r.Fields.Code+"=UP-TOP").Data[0]
			if child.Parent == nil || *child.Parent != top.ID {
				t.Fatalf("child's parent %v, want %d", child.Parent, top.ID)
			}
		}
		// mode=create refuses a code that exists, and writes nothing.
		resp := a.importFile(r, "mode=create", "text/csv", csvOf(header, r.fileRow("UP-NEW", "New", ""), r.fileRow("UP-OLD", "Again", "")))
		rowErrors(t, resp, 3, r.Fields.Code)
		if len(a.list(r, r.Fields.Code+"=UP-NEW").Data) != 0 {
			t.Fatal("a refused import wrote a record")
		}
	})
}

// rowErrors checks a 400 whose rows include row with an error on field.
func rowErrors(t *testing.T, resp *response, row int, field string) {
	t.Helper()
	if resp.Status != http.StatusBadRequest {
		t.Fatalf("got %s, want 400", resp)
	}
	var res importResult
	_ = json.Unmarshal(resp.Body, &res)
	for _, r := range res.Rows {
		if r.Row == row && len(r.Errors[field]) > 0 {
			return
		}
	}
	t.Fatalf("no error on %s in row %d: %s", field, row, resp.Body)
}

// Every bad row is reported with its number (the header is row 1), and
// nothing is written.
func TestImport_BadRowsAreAllReportedAndNothingIsWritten(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		before := a.list(r, "").Count
		header := r.fileHeader()
		rows := [][]string{header,
			r.fileRow("BAD-OK", "Fine", ""),
			r.fileRow("BAD-BLANK", "", ""),
			r.fileRow("BAD-DUP", "One", ""),
			r.fileRow("bad-dup", "Two", ""),
			r.fileRow("BAD-LONG", strings.Repeat("x", r.Limits.Name+1), ""),
		}
		if r.Hierarchical() {
			rows = append(rows, r.fileRow("BAD-ORPHAN", "Orphan", "NO-SUCH"),
				r.fileRow("BAD-C1", "Cycle", "BAD-C2"), r.fileRow("BAD-C2", "Cycle", "BAD-C1"))
		}
		resp := a.importFile(r, "", "text/csv", csvOf(rows...))
		rowErrors(t, resp, 3, r.Fields.Name)
		rowErrors(t, resp, 5, r.Fields.Code)
		rowErrors(t, resp, 6, r.Fields.Name)
		if r.Hierarchical() {
			rowErrors(t, resp, 7, r.parentCol())
			rowErrors(t, resp, 8, r.parentCol())
		}
		var body struct {
			Rows []struct{ Row int } `json:"rows"`
		}
		_ = json.Unmarshal(resp.Body, &body)
		for _, row := range body.Rows {
			if row.Row == 2 {
				t.Fatalf("the valid row 2 is reported: %s", resp.Body)
			}
		}
		if after := a.list(r, "").Count; after != before {
			t.Fatalf("%d records after a refused import, %d before", after, before)
		}
		// A dry run answers the same rows with 200, and writes nothing.
		res := a.imported(r, "dry_run=true", "text/csv", csvOf(rows...))
		if len(res.Rows) == 0 || res.Created+res.Updated+res.Unchanged+res.Deleted != 0 {
			t.Fatalf("dry run of bad rows: %+v, want the rows and no counts", res)
		}
		res = a.imported(r, "dry_run=true", "text/csv", csvOf(header, r.fileRow("DRY", "Dry", "")))
		if res.Created != 1 || len(a.list(r, r.Fields.Code+"=DRY").Data) != 0 {
			t.Fatalf("dry run: %+v, or it wrote", res)
		}
	})
}

// A chain deeper than the hierarchy's bound is an error of the row that
// passes it, whether the file alone makes it too deep or the file hangs
// it under a deep stored chain (found only once the levels above it are
// written in the transaction): a dry run of such a file counts nothing,
// and nothing is written.
func TestImport_AChainDeeperThanTheBoundIsARowError(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		chain := func(from, n int, parent string) [][]string {
			rows := [][]string{r.fileHeader()}
			for k := from; k < from+n; k++ {
				rows = append(rows, r.fileRow(fmt.Sprintf("DEEP-%d", k), "Deep", parent))
				parent = fmt.Sprintf("DEEP-%d", k)
			}
			return rows
		}
		refused := func(a *api, rows [][]string, before int) {
			t.Helper()
			res := a.imported(r, "dry_run=true", "text/csv", csvOf(rows...))
			last := len(rows)
			if len(res.Rows) != 1 || res.Rows[0].Row != last || len(res.Rows[0].Errors[r.parentCol()]) != 1 {
				t.Fatalf("%d rows: %+v, want an error of row %d's %s", len(rows)-1, res.Rows, last, r.parentCol())
			}
			if res.Created+res.Updated+res.Unchanged+res.Deleted != 0 {
				t.Fatalf("a dry run of a refused file counts %+v", res)
			}
			if resp := a.importFile(r, "", "text/csv", csvOf(rows...)); resp.Status != http.StatusBadRequest {
				t.Fatalf("import of a chain too deep: %s", resp)
			}
			if n := a.list(r, r.Fields.Code+"_icontains=DEEP-").Count; n != before {
				t.Fatalf("a refused import left %d records, not %d", n, before)
			}
		}
		refused(a, chain(0, resource.MaxDepth+1, ""), 0)

		// Depths 0 .. MaxDepth-2 stored.
		stored := deepChain(t, a, r, "DEEP-%d", resource.MaxDepth-1)
		// The first row fits (the deepest level allowed), the second
		// passes it.
		refused(a.replica(t), chain(len(stored), 2, fmt.Sprintf("DEEP-%d", len(stored)-1)), len(stored))
	})
}

// A column the resource does not have is a 400 naming it; a viewer may
// export but not import.
func TestImport_UnknownColumnsAndViewersAreRefused(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		resp := a.importFile(r, "", "text/csv", csvOf([]string{r.Fields.Code, r.Fields.Name, "Salary"}, []string{"X", "Y", "1"}))
		if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), `\"Salary\"`) {
			t.Fatalf("unknown column: %s", resp)
		}
		a.addUser("viv-"+r.Name, auth.RoleViewer, testPassword)
		viewer := *a
		viewer.token = a.login("viv-"+r.Name, testPassword)
		if resp := viewer.do(http.MethodGet, r.export(""), nil); resp.Status != http.StatusOK {
			t.Fatalf("viewer export: %s", resp)
		}
		resp = viewer.importFile(r, "", "text/csv", csvOf(r.fileHeader(), r.fileRow("VIEW", "Viewer", "")))
		if resp.Status != http.StatusForbidden {
			t.Fatalf("viewer import: %s", resp)
		}
	})
}

// An import through a multipart form's "file" leaves one audit entry a
// changed record, with the importing user as actor, and none for an
// unchanged one.
func TestImport_LeavesAnAuditEntryPerChangedRecord(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "AUD-SAME", "Same", nil)
		q := "resource=" + r.Name
		start := len(a.audit(q))
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		part, _ := mw.CreateFormFile("file", "data.csv")
		_, _ = part.Write(csvOf(r.fileHeader(), r.fileRow("AUD-NEW1", "New", ""), r.fileRow("AUD-NEW2", "New", ""), r.fileRow("AUD-SAME", "Same", "")))
		_ = mw.Close()
		res := a.imported(r, "", mw.FormDataContentType(), b.Bytes())
		if res.Created != 2 || res.Unchanged != 1 {
			t.Fatalf("import: %+v", res)
		}
		entries := a.audit(q)
		if len(entries) != start+2 {
			t.Fatalf("%d audit entries after importing 2 new records, want %d", len(entries), start+2)
		}
		for _, e := range entries[:2] {
			if e.Action != "create" || e.Actor == nil || e.Actor.Username != testUser {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// delete_missing deletes the records the file lacks, children first.
func TestImport_DeleteMissingMakesTheFileTheWholeResource(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		keep := a.create(r, "DM-KEEP", "Keep", nil)
		var p any
		gone := a.create(r, "DM-GONE", "Gone", nil)
		if r.Hierarchical() {
			p = gone
		}
		a.create(r, "DM-GONE-CHILD", "Gone too", p)
		resp := a.do(http.MethodGet, r.export(r.Fields.Code+"=DM-KEEP"), nil)
		// Other tests' records are not in the file either: this resource
		// is only this test's within its database when run alone, so the
		// file is every record but the two to go.
		all := a.do(http.MethodGet, r.export(""), nil)
		lines := strings.Split(strings.TrimSpace(string(all.Body)), "\n")
		var kept []string
		for _, l := range lines {
			if !strings.Contains(l, "DM-GONE") {
				kept = append(kept, l)
			}
		}
		_ = resp
		res := a.imported(r, "delete_missing=true", "text/csv", []byte(strings.Join(kept, "\n")+"\n"))
		if res.Deleted != 2 || res.Created != 0 || res.Updated != 0 {
			t.Fatalf("import: %+v", res)
		}
		if got := a.codes(r, r.Fields.Code+"_icontains=DM-"); !slices.Equal(got, []string{"DM-KEEP"}) {
			t.Fatalf("left %q", got)
		}
		_ = keep
	})
}

// An export selects and orders as the list does.
func TestExport_FollowsTheListsFiltersAndOrdering(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, c := range []string{"ORD-B", "ORD-A", "ORD-C", "XORD-D"} {
			a.create(r, c, "Ordered "+c, nil)
		}
		resp := a.do(http.MethodGet, r.export(r.Fields.Code+"_icontains=ord-&ordering=-"+r.Fields.Code+"&format=json"), nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("export: %s", resp)
		}
		var got []map[string]any
		if err := json.Unmarshal(resp.Body, &got); err != nil {
			t.Fatalf("export JSON: %v: %s", err, resp.Body)
		}
		var codes []string
		for _, m := range got {
			if c, _ := m[r.Fields.Code].(string); strings.HasPrefix(c, "ORD-") || strings.HasPrefix(c, "XORD-") {
				codes = append(codes, c)
			}
		}
		if want := []string{"XORD-D", "ORD-C", "ORD-B", "ORD-A"}; !slices.Equal(codes, want) {
			t.Fatalf("exported %q, want %q", codes, want)
		}
	})
}

// bulkCreate creates n records of r, the i-th with body(i), by bulk
// creates of at most 1,000 (the API's default limit).
func (a *api) bulkCreate(r res, n int, body func(i int) map[string]any) {
	a.t.Helper()
	for start := 0; start < n; start += 1000 {
		var items []any
		for i := start; i < min(start+1000, n); i++ {
			items = append(items, body(i))
		}
		if resp := a.do(http.MethodPost, r.coll(), items); resp.Status != http.StatusCreated {
			a.t.Fatalf("bulk create: %.300s", resp)
		}
	}
}

// An export longer than one batch of its reads follows the list's order
// across the batches, ties (equal names) included.
func TestExport_CrossesBatchesInTheListsOrder(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		const n = 2300
		a.bulkCreate(r, n, func(i int) map[string]any { return r.body(fmt.Sprintf("KS-%05d", i), fmt.Sprintf("Name %d", i%7), nil) })
		for _, ordering := range []string{"", "-" + r.Fields.Name, r.Fields.Name + ",-id"} {
			q := r.Fields.Code + "_icontains=KS-&ordering=" + ordering
			var want []string
			for page := 1; len(want) < n; page++ {
				want = append(want, a.codes(r, fmt.Sprintf("%s&page=%d", q, page))...)
			}
			resp := a.do(http.MethodGet, r.export(q), nil)
			recs, err := csv.NewReader(bytes.NewReader(resp.Body)).ReadAll()
			if err != nil || len(recs) != n+1 {
				t.Fatalf("ordering %q: %d rows, %v", ordering, len(recs), err)
			}
			for i, rec := range recs[1:] {
				if rec[1] != want[i] {
					t.Fatalf("ordering %q: row %d is %s, the list has %s", ordering, i+2, rec[1], want[i])
				}
			}
		}
	})
}

// An export's file is made before it is sent, so a client that stalls
// while downloading holds no database connection: as many stalled exports
// as the pool has connections still leave other requests their answers,
// and each export is whole once its client reads on.
func TestExport_StalledDownloadsHoldNoDatabaseConnection(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		// More than one batch of the export's reads, so that the file's
		// first bytes are written before its last records are read.
		const records = 1100
		a.bulkCreate(r, records, func(i int) map[string]any { return r.body(fmt.Sprintf("STALL-%05d", i), "Stalled download", nil) })
		pools := a.db.Pools()
		pool, ok := pools["read"]
		if !ok {
			for _, p := range pools {
				pool = p
			}
		}
		n := pool.Stats().MaxOpenConnections
		if n <= 0 {
			t.Fatalf("the pool has no bound (%d): the test cannot fill it", n)
		}
		release := make(chan struct{})
		var sending, done sync.WaitGroup
		sending.Add(n)
		downloads := make([]*stalled, n)
		for i := range downloads {
			downloads[i] = &stalled{header: http.Header{}, sending: &sending, release: release}
			done.Add(1)
			go func() {
				defer done.Done()
				req := httptest.NewRequest(http.MethodGet, r.export(r.Fields.Code+"_icontains=stall-"), nil)
				req.Header.Set("Authorization", "JWT "+a.token)
				a.h.ServeHTTP(downloads[i], req)
			}()
		}
		sending.Wait()
		if got := a.list(r, r.Fields.Code+"_icontains=stall-").Count; got != records {
			t.Errorf("a list while %d downloads stall counts %d records, want %d", n, got, records)
		}
		close(release)
		done.Wait()
		for i, d := range downloads {
			recs, err := csv.NewReader(&d.body).ReadAll()
			if d.status != http.StatusOK || err != nil || len(recs) != records+1 {
				t.Errorf("download %d: %d, %d rows, %v", i, d.status, len(recs)-1, err)
			}
		}
	})
}

// stalled is a response writer whose client stops reading at the first
// bytes of the body, says so on sending, and reads on once release is
// closed.
type stalled struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	sending *sync.WaitGroup
	release chan struct{}
}

func (w *stalled) Header() http.Header { return w.header }

func (w *stalled) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *stalled) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len() == 0 {
		w.sending.Done()
		<-w.release
	}
	return w.body.Write(p)
}

// Flush lets the handler flush, which changes nothing here.
func (w *stalled) Flush() {}

// In strict mode the export knows format, and the import its own flags;
// an unknown parameter is still a 400.
func TestExport_StrictModeKnowsTheFileParameters(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		if resp := a.do(http.MethodGet, r.export("format=json"), nil); resp.Status != http.StatusOK {
			t.Fatalf("strict export: %s", resp)
		}
		wantError(t, a.do(http.MethodGet, r.export("format=json&bogus=1"), nil), http.StatusBadRequest)
		a.imported(r, "dry_run=true&mode=create&delete_missing=false", "text/csv", csvOf(r.fileHeader(), r.fileRow("STRICT", "Strict", "")))
		wantError(t, a.importFile(r, "bogus=1", "text/csv", csvOf(r.fileHeader())), http.StatusBadRequest)
	}, func(c *config.Config) { c.StrictQuery = true })
}

// A reader never sees part of an import: every count taken while it runs
// is the count before it or the count after it.
func TestImport_ReadersSeeAllOrNothingOfIt(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		before := a.list(r, "").Count
		const n = 1500
		rows := [][]string{r.fileHeader()}
		for i := range n {
			rows = append(rows, r.fileRow(fmt.Sprintf("CONC-%04d", i), "Concurrent", ""))
		}
		data := csvOf(rows...)
		done := make(chan importResult)
		go func() {
			req := httptest.NewRequest(http.MethodPost, r.importPath(""), bytes.NewReader(data))
			req.Header.Set("Content-Type", "text/csv")
			req.Header.Set("Authorization", "JWT "+a.token)
			rec := httptest.NewRecorder()
			a.h.ServeHTTP(rec, req)
			var res importResult
			_ = json.Unmarshal(rec.Body.Bytes(), &res)
			done <- res
		}()
		for {
			select {
			case res := <-done:
				if res.Created != n {
					t.Fatalf("import: %+v", res)
				}
				if got := a.list(r, "").Count; got != before+n {
					t.Fatalf("%d records after, want %d", got, before+n)
				}
				return
			default:
			}
			// Counted by the database, not the kept count: a search.
			got := a.list(r, "search=conc-").Count
			if got != 0 && got != n {
				t.Fatalf("a reader saw %d of the %d imported records", got, n)
			}
		}
	})
}

// delete_missing refuses, writing nothing, to delete a record that keeps
// a child the file keeps.
func TestImport_DeleteMissingRefusesToOrphanAKeptChild(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		p := a.create(r, "DMR-P", "Parent", nil)
		a.create(r, "DMR-C", "Child", p)
		all := a.do(http.MethodGet, r.export(""), nil)
		var kept []string
		for _, l := range strings.Split(strings.TrimSpace(string(all.Body)), "\n") {
			// The code is the second column (the parent's code, later,
			// may be followed by extra fields).
			if cols := strings.Split(l, ","); len(cols) < 2 || cols[1] != "DMR-P" {
				kept = append(kept, l)
			}
		}
		resp := a.importFile(r, "delete_missing=true", "text/csv", []byte(strings.Join(kept, "\n")+"\n"))
		if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "DMR-C") {
			t.Fatalf("delete_missing under a kept child: %s", resp)
		}
		if got := a.codes(r, r.Fields.Code+"_icontains=DMR-"); len(got) != 2 {
			t.Fatalf("left %q", got)
		}
	})
}

// FuzzImport: whatever bytes a file holds, in whichever format, a dry
// run of its import answers 200 or a 4xx, never a 5xx or a panic.
func FuzzImport(f *testing.F) {
	a := newAPI(f, dbtest.Backends(f)[0])
	r := res{server.CompiledResources()[0]}
	f.Add([]byte(r.Fields.Code+","+r.Fields.Name+","+r.parentCol()+"\nA,B,\nC,D,A\n"), uint8(0))
	f.Add([]byte(`[{"`+r.Fields.Code+`":"A","`+r.Fields.Name+`":"B"}]`), uint8(2))
	f.Add([]byte("\xef\xbb\xbf"+r.Fields.Code+"\n'=x\n"), uint8(0))
	f.Add([]byte("PK\x03\x04"), uint8(1))
	types := []string{"text/csv", xlsxType, "application/json"}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		req := httptest.NewRequest(http.MethodPost, r.importPath("dry_run=true"), bytes.NewReader(data))
		req.Header.Set("Content-Type", types[int(format)%len(types)])
		req.Header.Set("Authorization", "JWT "+a.token)
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
}
