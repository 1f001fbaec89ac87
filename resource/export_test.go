package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"personnel/apierror"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/tabular"
)

// An export is one snapshot: records created, renamed, given a new parent
// code or deleted while it is read (here once its first rows are written)
// are in the file as they were when it began, each once, on every backend.
func TestExport_IsOneSnapshotWhateverIsWrittenMeanwhile(t *testing.T) {
	descs, err := config.Resources()
	if err != nil {
		t.Fatal(err)
	}
	desc := descs[slices.IndexFunc(descs, func(d config.Resource) bool { return d.Name == "department" })]
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			r := newResource(desc, d, Options{PageSizeMax: 1000, Resources: descs})
			ctx := context.Background()
			key := func(i int) string { return r.fields.List[i].Key }
			input := func(mode Mode, fields map[string]any) Input {
				t.Helper()
				m := map[string]json.RawMessage{}
				for k, v := range fields {
					m[k], _ = json.Marshal(v)
				}
				in, err := r.DecodeInput(m, mode)
				if err != nil {
					t.Fatalf("input %v: %v", fields, err)
				}
				return in
			}
			create := func(code, name string, parent any) int {
				t.Helper()
				row, err := r.Create(ctx, input(ModeCreate, map[string]any{key(r.fields.Code): code, key(r.fields.Name): name, key(r.fields.Parent): parent}))
				if err != nil {
					t.Fatalf("create %s: %v", code, err)
				}
				return row.ID
			}
			const n = 2300 // three batches of the export's reads
			parent := create("SNAP-P", "Snapshot parent", nil)
			var ins []Input
			for i := range n {
				var p any
				if i == n-1 {
					p = parent
				}
				ins = append(ins, input(ModeCreate, map[string]any{key(r.fields.Code): fmt.Sprintf("SNAP-%05d", i), key(r.fields.Name): fmt.Sprintf("Name %d", i), key(r.fields.Parent): p}))
			}
			var ids []int
			for start := 0; start < n; start += 1000 {
				part := ins[start:min(start+1000, n)]
				rows, bad, err := r.BulkCreate(ctx, part, make([][]apierror.FieldError, len(part)))
				if err != nil || bad {
					t.Fatalf("bulk create: %v, refused: %v", err, bad)
				}
				for _, row := range rows {
					ids = append(ids, row.ID)
				}
			}
			renamed, deleted := ids[n-100], ids[n-50]
			meanwhile := func() {
				if _, err := r.Update(ctx, renamed, input(ModePatch, map[string]any{key(r.fields.Name): "Renamed meanwhile"}), nil); err != nil {
					t.Fatalf("rename: %v", err)
				}
				if err := r.Delete(ctx, deleted, nil); err != nil {
					t.Fatalf("delete: %v", err)
				}
				create("SNAP-NEW", "Created meanwhile", nil)
				if _, err := r.Update(ctx, parent, input(ModePatch, map[string]any{key(r.fields.Code): "SNAP-Q"}), nil); err != nil {
					t.Fatalf("renaming the parent's code: %v", err)
				}
			}
			w := &hookWriter{after: 100, at: meanwhile}
			if err := r.Export(ctx, Query{}, w); err != nil {
				t.Fatal(err)
			}
			if w.before < 0 || w.before >= exportBatch {
				t.Fatalf("the writes ran after %d rows, not within the first batch", w.before)
			}
			if len(w.rows) != n+1 {
				t.Fatalf("%d rows, want the %d records there were when it began", len(w.rows), n+1)
			}
			code, name, parentCode := slices.Index(w.header, key(r.fields.Code)), slices.Index(w.header, key(r.fields.Name)), slices.Index(w.header, r.ParentCodeColumn())
			byCode := map[string][]tabular.Cell{}
			for _, row := range w.rows {
				byCode[row[code].Str] = row
			}
			if _, ok := byCode["SNAP-NEW"]; ok {
				t.Errorf("a record created meanwhile is in the file")
			}
			if _, ok := byCode[fmt.Sprintf("SNAP-%05d", n-50)]; !ok {
				t.Errorf("a record deleted meanwhile is not in the file")
			}
			if got := byCode[fmt.Sprintf("SNAP-%05d", n-100)][name].Str; got != fmt.Sprintf("Name %d", n-100) {
				t.Errorf("a record renamed meanwhile has the name %q", got)
			}
			if _, ok := byCode["SNAP-P"]; !ok {
				t.Errorf("the parent is not in the file under its code of the start")
			}
			if got := byCode[fmt.Sprintf("SNAP-%05d", n-1)][parentCode].Str; got != "SNAP-P" {
				t.Errorf("the child names its parent %q, the parent's row SNAP-P", got)
			}
			// The writes were made and kept.
			if got, err := r.Get(ctx, renamed); err != nil || got.Values[r.fields.Name].Str != "Renamed meanwhile" {
				t.Fatalf("the rename was not kept: %v %v", got.Values, err)
			}
		})
	}
}

// hookWriter is a tabular.Writer that keeps what it is given and calls at
// once, when it is given row number after (from 0).
type hookWriter struct {
	header []string
	rows   [][]tabular.Cell
	after  int
	at     func()
	before int // rows given when at ran; -1 until it has
	ran    bool
}

func (w *hookWriter) Header(columns []string) error {
	w.header, w.before = slices.Clone(columns), -1
	return nil
}

func (w *hookWriter) Row(cells []tabular.Cell) error {
	if !w.ran && len(w.rows) == w.after {
		w.ran, w.before = true, len(w.rows)
		w.at()
	}
	w.rows = append(w.rows, slices.Clone(cells))
	return nil
}

func (w *hookWriter) Close() error { return nil }
