package db_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"personnel/db"
	"personnel/db/dbtest"
	"personnel/record"
)

// create inserts a record of cols' table with code through tx, behind the
// store's back.
func create(ctx context.Context, tx db.Tx, code string) error {
	q := fmt.Sprintf("INSERT INTO `%s` (`%s`, `%s`, `%s`, `%s`) VALUES (?, ?, 'n', 'n')", cols.Table, cols.Code, cols.CodeFold, cols.Name, cols.NameFold)
	_, err := tx.ExecContext(ctx, q, code, strings.ToLower(code))
	return err
}

// createIndexed creates a record of code through the store's table, which
// keeps every structure beside it.
func createIndexed(ctx context.Context, d *db.DB, tx db.Tx, code string) error {
	t := d.Table(res)
	row := record.Row{Values: t.Fields.Defaults()}
	row.Values[t.Fields.Code] = record.Value{Str: code, Valid: true}
	row.Values[t.Fields.Name] = record.Value{Str: "n", Valid: true}
	return t.Insert(ctx, tx, []record.Row{row})
}

// holdWriter starts a write (of code) whose function waits until release
// is called: while it waits, the SQLite writer is busy, so writes
// submitted meanwhile queue up for the next batch.
func holdWriter(t *testing.T, d *db.DB, code string) (release func(), result <-chan error) {
	t.Helper()
	started, rel, res := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		res <- d.InTx(context.Background(), func(tx db.Tx) error {
			close(started)
			<-rel
			return createIndexed(context.Background(), d, tx, code)
		})
	}()
	<-started
	release = sync.OnceFunc(func() { close(rel) })
	t.Cleanup(release) // a failed test must not leave Close waiting for the writer
	return release, res
}

// hangGuard is how long a test waits for something that should happen at
// once before failing instead of hanging; it does not measure anything.
const hangGuard = 30 * time.Second

// waitQueued waits until n writes are queued behind the held writer.
func waitQueued(t *testing.T, d *db.DB, n int) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); db.QueuedWrites(d) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", db.QueuedWrites(d), n)
		}
	}
}

// codes returns the codes of every record of cols' table, sorted.
func codes(t *testing.T, d *db.DB) []string {
	t.Helper()
	return column[string](t, d.Read(), fmt.Sprintf("SELECT `%s` FROM `%s` ORDER BY `%s`", cols.Code, cols.Table, cols.Code))
}

func TestInTx_SQLiteCommitsConcurrentWritesTogether(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	before := d.GroupCommitStats()
	release, held := holdWriter(t, d, "HELD")
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.InTx(context.Background(), func(tx db.Tx) error {
				return create(context.Background(), tx, fmt.Sprintf("W%02d", i))
			})
		}()
	}
	waitQueued(t, d, n)
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("held write: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// One commit for the held write, one for the 20 that queued behind it.
	if got := d.GroupCommitStats().Batches - before.Batches; got != 2 {
		t.Fatalf("%d writes took %d commits, want 2", n+1, got)
	}
	if got := d.GroupCommitStats().Writes - before.Writes; got != n+1 {
		t.Fatalf("%d writes counted as committed, want %d", got, n+1)
	}
	if got := len(codes(t, d)); got != n+1 {
		t.Fatalf("%d records, want %d", got, n+1)
	}
}

func TestInTx_SQLiteFailingWritesRollBackAloneInTheirBatch(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	ctx := context.Background()
	before := d.GroupCommitStats()
	release, held := holdWriter(t, d, "HELD")
	boom := errors.New("boom")
	writes := []func(tx db.Tx) error{
		func(tx db.Tx) error { return createIndexed(ctx, d, tx, "KEPT1") },
		func(tx db.Tx) error { return createIndexed(ctx, d, tx, "KEPT1") }, // duplicate of the write before
		func(tx db.Tx) error {
			if err := createIndexed(ctx, d, tx, "FAILED"); err != nil {
				return err
			}
			return boom
		},
		func(tx db.Tx) error {
			if err := createIndexed(ctx, d, tx, "PANICKED"); err != nil {
				return err
			}
			panic("fn panicked")
		},
		func(tx db.Tx) error { return createIndexed(ctx, d, tx, "KEPT2") },
	}
	errs := make([]error, len(writes))
	panics := make([]any, len(writes))
	var wg sync.WaitGroup
	for i, fn := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			errs[i] = d.InTx(ctx, fn)
		}()
		waitQueued(t, d, i+1) // queued in this order
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("held write: %v", err)
	}
	if errs[0] != nil || errs[4] != nil {
		t.Errorf("the good writes failed: %v, %v", errs[0], errs[4])
	}
	if !db.IsUniqueViolation(errs[1]) {
		t.Errorf("duplicate code: %v, want a unique violation", errs[1])
	}
	if !errors.Is(errs[2], boom) {
		t.Errorf("failing write: %v, want its own error", errs[2])
	}
	if panics[3] != "fn panicked" {
		t.Errorf("panicking write: recovered %v, want its panic raised in its caller", panics[3])
	}
	if got := d.GroupCommitStats().Batches - before.Batches; got != 2 {
		t.Errorf("%d commits, want 2 (the held write, then the batch)", got)
	}
	if got, want := codes(t, d), []string{"HELD", "KEPT1", "KEPT2"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	// The rolled-back writes' counts, substring index rows, closure rows
	// and block counts were undone with them.
	if err := d.Check(ctx); err != nil {
		t.Fatalf("after the rolled-back writes: %v", err)
	}
}

func TestInTx_SQLiteCancelledQueuedWriteDoesNotRun(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	release, held := holdWriter(t, d, "HELD")
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	res := make(chan error, 1)
	go func() {
		res <- d.InTx(ctx, func(tx db.Tx) error {
			ran.Store(true)
			return create(ctx, tx, "CANCELLED")
		})
	}()
	waitQueued(t, d, 1)
	cancel()
	// The caller leaves at once, while the writer is still busy.
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled write: %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("the cancelled caller still waits for the busy writer")
	}
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// A later write runs after the abandoned one was passed over.
	if err := d.InTx(context.Background(), func(tx db.Tx) error { return create(context.Background(), tx, "LATER") }); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("the cancelled write's function ran")
	}
	if got, want := codes(t, d), []string{"HELD", "LATER"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

func TestInTx_SQLiteWriteCancelledWhileRunningIsRolledBackAlone(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	release, held := holdWriter(t, d, "HELD")
	ctx, cancel := context.WithCancel(context.Background())
	var afterCancel error
	res := make(chan error, 2)
	go func() {
		res <- d.InTx(ctx, func(tx db.Tx) error {
			if err := create(ctx, tx, "GONE1"); err != nil {
				return err
			}
			cancel() // the client goes away while its write runs
			afterCancel = create(ctx, tx, "GONE2")
			return nil // as if fn did not notice
		})
	}()
	waitQueued(t, d, 1)
	go func() {
		res <- d.InTx(context.Background(), func(tx db.Tx) error { return create(context.Background(), tx, "KEPT") })
	}()
	waitQueued(t, d, 2)
	release()
	var canceled, ok int
	for range 2 {
		switch err := <-res; {
		case err == nil:
			ok++
		case errors.Is(err, context.Canceled):
			canceled++
		default:
			t.Fatalf("unexpected answer %v", err)
		}
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if canceled != 1 || ok != 1 {
		t.Fatalf("%d cancelled and %d committed, want one each", canceled, ok)
	}
	if !errors.Is(afterCancel, context.Canceled) {
		t.Fatalf("a statement after the cancellation: %v, want context.Canceled", afterCancel)
	}
	if got, want := codes(t, d), []string{"HELD", "KEPT"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

func TestInTx_SQLiteAfterCloseFails(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	err := d.InTx(context.Background(), func(tx db.Tx) error { return nil })
	if err == nil {
		t.Fatal("InTx after Close succeeded")
	}
}

func TestInTx_SQLiteFailedCommitFailsTheWholeBatch(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	ctx := context.Background()
	release, held := holdWriter(t, d, "HELD")
	writes := []func(tx db.Tx) error{
		func(tx db.Tx) error { return create(ctx, tx, "GOOD1") },
		func(tx db.Tx) error {
			// A deferred foreign key is checked at COMMIT: the orphan is
			// accepted now and makes the batch's COMMIT fail.
			if _, err := tx.ExecContext(ctx, "PRAGMA defer_foreign_keys = ON"); err != nil {
				return err
			}
			q := fmt.Sprintf("INSERT INTO `%s` (`%s`, `%s`, `%s`, `%s`, `%s`) VALUES ('ORPHAN', 'orphan', 'n', 'n', 424242)",
				cols.Table, cols.Code, cols.CodeFold, cols.Name, cols.NameFold, cols.Parent)
			_, err := tx.ExecContext(ctx, q)
			return err
		},
		func(tx db.Tx) error { return create(ctx, tx, "GOOD2") },
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, fn := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.InTx(ctx, fn)
		}()
		waitQueued(t, d, i+1)
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if !db.IsForeignKeyViolation(err) {
			t.Errorf("write %d: %v, want the COMMIT's foreign key error", i, err)
		}
	}
	// The failed COMMIT left nothing behind, and the writer goes on.
	if err := d.InTx(ctx, func(tx db.Tx) error { return create(ctx, tx, "AFTER") }); err != nil {
		t.Fatalf("a write after the failed commit: %v", err)
	}
	if got, want := codes(t, d), []string{"AFTER", "HELD"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

func TestInTx_SQLiteWriteThatEndsTheTransactionMakesTheOthersRunAgain(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	ctx := context.Background()
	release, held := holdWriter(t, d, "HELD")
	var runs [3]atomic.Int32
	writes := []func(tx db.Tx) error{
		func(tx db.Tx) error { runs[0].Add(1); return create(ctx, tx, "GOOD1") },
		func(tx db.Tx) error {
			// A misbehaving write: it rolls back the whole batch's
			// transaction, GOOD1's insert with it.
			runs[1].Add(1)
			_, err := tx.ExecContext(ctx, "ROLLBACK")
			return err
		},
		func(tx db.Tx) error { runs[2].Add(1); return create(ctx, tx, "GOOD2") },
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, fn := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.InTx(ctx, fn)
		}()
		waitQueued(t, d, i+1)
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the innocent writes failed: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil {
		t.Fatal("the write that ended the transaction succeeded")
	}
	// GOOD1 ran in the lost batch and again; GOOD2 only in the next one.
	if runs[0].Load() != 2 || runs[1].Load() != 1 || runs[2].Load() != 1 {
		t.Fatalf("runs %d, %d, %d, want 2, 1, 1", runs[0].Load(), runs[1].Load(), runs[2].Load())
	}
	if got, want := codes(t, d), []string{"GOOD1", "GOOD2", "HELD"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

// A write alone in its batch runs with no savepoint: when it fails or
// panics, rolling the transaction back undoes all of it, structures
// included.
func TestInTx_SQLiteAFailingWriteAloneInItsBatchLeavesNothing(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	ctx := context.Background()
	before := d.GroupCommitStats()
	boom := errors.New("boom")
	if err := d.InTx(ctx, func(tx db.Tx) error { return createIndexed(ctx, d, tx, "KEPT") }); err != nil {
		t.Fatal(err)
	}
	err := d.InTx(ctx, func(tx db.Tx) error {
		if err := createIndexed(ctx, d, tx, "FAILED"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write: %v, want its own error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "fn panicked" {
				t.Errorf("panicking write: recovered %v, want its panic", p)
			}
		}()
		_ = d.InTx(ctx, func(tx db.Tx) error {
			if err := createIndexed(ctx, d, tx, "PANICKED"); err != nil {
				return err
			}
			panic("fn panicked")
		})
	}()
	if got, want := codes(t, d), []string{"KEPT"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if got := d.GroupCommitStats().Writes - before.Writes; got != 1 {
		t.Errorf("%d writes counted as committed, want 1", got)
	}
	if err := d.Check(ctx); err != nil {
		t.Fatalf("after the rolled-back writes: %v", err)
	}
	// The writer goes on with the next write.
	if err := d.InTx(ctx, func(tx db.Tx) error { return createIndexed(ctx, d, tx, "AFTER") }); err != nil {
		t.Fatal(err)
	}
}

// A write marked Alone (an import, a bulk create) is never batched with
// others: the writes queued before it commit together, it commits on its
// own, and those queued after it commit together after it.
func TestInTx_SQLiteAWriteMarkedAloneCommitsInABatchOfItsOwn(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	ctx := context.Background()
	before := d.GroupCommitStats()
	release, held := holdWriter(t, d, "HELD")
	names := []string{"W0", "W1", "ALONE", "W3", "W4"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wctx := ctx
		if name == "ALONE" {
			wctx = db.Alone(ctx)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.InTx(wctx, func(tx db.Tx) error { return create(wctx, tx, name) })
		}()
		waitQueued(t, d, i+1) // queued in this order
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("held write: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %s: %v", names[i], err)
		}
	}
	if got := d.GroupCommitStats().Batches - before.Batches; got != 4 {
		t.Fatalf("%d commits, want 4 (the held write, W0 and W1, ALONE, W3 and W4)", got)
	}
	if got := len(codes(t, d)); got != len(names)+1 {
		t.Fatalf("%d records, want %d", got, len(names)+1)
	}
}
