package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"personnel/db"
	store "personnel/record"
	"personnel/resource"
	"personnel/server"
)

// loadFlat loads n records without parents and returns every id of the
// table, ascending.
func loadFlat(t *testing.T, a *api, r res, n int) []int {
	t.Helper()
	recs := make([]resource.NewRecord, n)
	for i := range recs {
		recs[i] = resource.NewRecord{Code: fmt.Sprintf("D%05d", i), Name: "deep"}
	}
	if _, err := server.Loaders(a.db)[r.Name].Load(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	return tableIDs(t, a, r)
}

// tableIDs returns the ids of r's table as the database has them,
// ascending.
func tableIDs(t *testing.T, a *api, r res) []int {
	t.Helper()
	s := a.db.SQL().Raw("SELECT ").Ident("id").Raw(" FROM ").Ident(r.Table).Raw(" ORDER BY ").Ident("id")
	rows, err := a.db.Read().QueryContext(context.Background(), s.String())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// pageIDs returns the ids of a list page, which must succeed.
func pageIDs(a *api, r res, q string) []int {
	a.t.Helper()
	var ids []int
	for _, rec := range a.list(r, q).Data {
		ids = append(ids, rec.ID)
	}
	return ids
}

// window returns ids[from:from+n], cut at the end.
func window(ids []int, from, n int) []int {
	if from >= len(ids) {
		return nil
	}
	return ids[from:min(from+n, len(ids))]
}

// Deep pages in id order, either way, are found from the kept counts of
// each block of 4,096 ids (db/count.go): every page, those that cross
// from one block into the next included, holds the records at its offset
// in the table, with records deleted here and there, and the page after
// the last is a 404.
func TestList_DeepPagesInIDOrderHoldTheRecordsAtTheirOffset(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ids := loadFlat(t, a, r, 5000) // two blocks: ids 1-4095, 4096-
		for i := 100; i < len(ids); i += 97 {
			if resp := a.do(http.MethodDelete, r.item(ids[i]), nil); resp.Status != http.StatusNoContent {
				t.Fatalf("delete %d: %s", ids[i], resp)
			}
		}
		ids = tableIDs(t, a, r)
		desc := slices.Clone(ids)
		slices.Reverse(desc)
		for _, size := range []int{10, 100} {
			var pages []int
			for _, boundary := range []int{4096} { // pages around the second block's first record, and the last
				at, _ := slices.BinarySearch(ids, boundary)
				pages = append(pages, at/size, at/size+1, at/size+2)
				at, _ = slices.BinarySearchFunc(desc, boundary, func(e, t int) int { return t - e })
				pages = append(pages, at/size, at/size+1, at/size+2)
			}
			pages = append(pages, (len(ids)+size-1)/size)
			for _, p := range pages {
				if (p-1)*size < 1000 {
					continue
				}
				q := fmt.Sprintf("page_size=%d&page=%d", size, p)
				if got, want := pageIDs(a, r, q), window(ids, (p-1)*size, size); !slices.Equal(got, want) {
					t.Fatalf("%s: %v, want %v", q, got, want)
				}
				q += "&ordering=-id"
				if got, want := pageIDs(a, r, q), window(desc, (p-1)*size, size); !slices.Equal(got, want) {
					t.Fatalf("%s: %v, want %v", q, got, want)
				}
			}
			past := (len(ids)+size-1)/size + 1
			wantError(t, a.do(http.MethodGet, r.query(fmt.Sprintf("page_size=%d&page=%d", size, past)), nil), http.StatusNotFound)
		}
		if err := a.db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}

		// The pages come from the counts: with the first block's count
		// 5 too high, a page in the second block starts 5 records early.
		// (The reindex that mends counts is the db package's test.)
		a.exec(a.db.SQL().Raw("INSERT INTO ").Ident(db.IDBlockTable(r.Table)).Raw(" (").Ident("block").Raw(", ").Ident("slot").
			Raw(", ").Ident("records").Raw(") VALUES (0, 99, 5)"))
		at, _ := slices.BinarySearch(ids, 5000)
		q := fmt.Sprintf("page_size=10&page=%d", at/10+1)
		if got, want := pageIDs(a, r, q), window(ids, at/10*10-5, 10); !slices.Equal(got, want) {
			t.Fatalf("%s with the first block counted 5 too many: %v, want %v", q, got, want)
		}
		a.exec(a.db.SQL().Raw("DELETE FROM ").Ident(db.IDBlockTable(r.Table)).Raw(" WHERE ").Ident("slot").Raw(" = 99"))
		if got, want := pageIDs(a, r, q), window(ids, at/10*10, 10); !slices.Equal(got, want) {
			t.Fatalf("%s with the count right again: %v, want %v", q, got, want)
		}
	})
}

// A deep page is read in two statements (the block counts, then the
// page), and records are deleted in between: each page must still be the
// page of one moment. One writer deletes, in one transaction each, a
// record of the first block and one of the second before the page, so the
// table goes through known states; a page that took its block's place
// from one state and its records from the next would be none of them.
func TestRace_DeepPagesWhileRecordsAreDeletedAreEachTheTablesPageAtSomeMoment(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		ids := loadFlat(t, a, r, 5000)
		at, _ := slices.BinarySearch(ids, 4096)
		const size = 10
		page := (at+500)/size + 1 // in the second block, 500 records in
		offset := (page - 1) * size
		// Step k deletes first[k] and second[k]: both before the page.
		var first, second []int
		for i := 0; i < 150; i++ {
			first = append(first, ids[10+i*10])
			second = append(second, ids[at+i*3])
		}
		state := func(k int) []int { // the page after k steps
			gone := map[int]bool{}
			for i := range k {
				gone[first[i]], gone[second[i]] = true, true
			}
			var left []int
			for _, id := range ids {
				if !gone[id] {
					left = append(left, id)
				}
			}
			return window(left, offset, size)
		}
		var done, started atomic.Int64 // steps committed; steps begun
		var stop atomic.Bool
		var wg sync.WaitGroup
		defer func() { stop.Store(true); wg.Wait() }() // should a read fail the test
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range first {
				if stop.Load() {
					return
				}
				started.Add(1)
				pair := []int{first[k], second[k]}
				table := a.db.Table(r.Resource)
				err := a.db.InTx(ctx, func(tx db.Tx) error {
					for _, id := range pair { // leaves: no children
						row := store.Row{ID: id, Values: make([]store.Value, len(table.Fields.List))}
						if err := table.Delete(ctx, tx, row); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					stop.Store(true)
					return
				}
				done.Add(1)
			}
		}()
		q := fmt.Sprintf("page_size=%d&page=%d", size, page)
		reads := 0
		for ; done.Load() < int64(len(first)) && !stop.Load(); reads++ {
			lo := int(done.Load())
			got := pageIDs(a, r, q)
			hi := int(started.Load())
			found := false
			for k := lo; k <= hi && !found; k++ {
				found = slices.Equal(got, state(k))
			}
			if !found {
				t.Errorf("read %d, with %d to %d steps done: page %v is the table's page after none of them", reads, lo, hi, got)
				stop.Store(true)
			}
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if err := a.db.Check(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d pages read during %d steps", reads, len(first))
	})
}
