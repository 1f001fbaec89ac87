package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"personnel/ent"
)

// maxBatch bounds how many writes one SQLite transaction commits together,
// so that a write taken into a batch waits for at most maxBatch-1 others,
// and is the length of the queue. With clients in a closed loop, about
// half of them are being answered while the other half's batch runs, so a
// batch holds about half the clients (BENCHMARKS.md, "Group commit on
// SQLite"); well below this bound the fsync is already a small share of
// each write.
const maxBatch = 64

// Savepoint statements, one name for every write of a batch: each write's
// savepoint is released or rolled back (and released) before the next
// write's begins.
const (
	savepointBegin    = "SAVEPOINT `personnel_write`"
	savepointRelease  = "RELEASE `personnel_write`"
	savepointRollback = "ROLLBACK TO `personnel_write`"
)

// GroupCommitStats says how SQLite's writer has committed the writes of
// InTx so far: Batches transactions committed, holding Writes writes in
// all. Both are zero on MySQL, where each write commits on its own.
type GroupCommitStats struct {
	Batches, Writes int64
}

// GroupCommitStats returns the writer's figures since Open.
func (d *DB) GroupCommitStats() GroupCommitStats {
	if d.group == nil {
		return GroupCommitStats{}
	}
	return GroupCommitStats{Batches: d.group.commits.Load(), Writes: d.group.committed.Load()}
}

// errClosed answers writes submitted after Close.
var errClosed = errors.New("db: the database is closed")

// batchAborted marks the answer of a write that did nothing wrong in a
// batch that failed as a whole after the write had run (its transaction
// was lost): its work was undone and InTx may run it again.
type batchAborted struct{ cause error }

func (e *batchAborted) Error() string {
	return "db: the write's batch was rolled back: " + e.cause.Error()
}

func (e *batchAborted) Unwrap() error { return e.cause }

// States of a writeRequest, changed only by compare-and-swap so that the
// caller giving up and the writer taking the write cannot both win.
const (
	stateQueued    int32 = iota
	stateTaken           // the writer runs it; the caller waits for the answer
	stateAbandoned       // the caller left (its context ended) before it ran
)

// aloneKey marks a context whose writes run in a batch of their own.
type aloneKey struct{}

// Alone marks the writes made with the returned context as large (an
// import, a bulk create): on SQLite each runs in a transaction of its own,
// never batched with others. A write that shares a batch runs in a
// savepoint, and SQLite keeps a copy of every page a savepoint changes,
// in memory (temp_store is MEMORY on the writer): for a small write a few
// pages, for an import a large share of the database.
func Alone(ctx context.Context) context.Context {
	return context.WithValue(ctx, aloneKey{}, true)
}

// isAlone says whether Alone marked ctx.
func isAlone(ctx context.Context) bool {
	alone, _ := ctx.Value(aloneKey{}).(bool)
	return alone
}

// writeRequest is one InTx call waiting for the writer.
type writeRequest struct {
	ctx   context.Context
	alone bool // run in a batch of its own (Alone)
	fn    func(tx *ent.Client) error
	state atomic.Int32
	done  chan writeResult // buffered: the writer never waits for the caller
}

// writeResult is the writer's answer to one write.
type writeResult struct {
	err      error
	panicked bool
	panicVal any // what fn panicked with, raised again in the caller
}

// groupCommitter is SQLite's single writer. It takes the writes waiting
// at the moment it is free, runs each in a savepoint of one transaction
// (a write alone in its batch needs none),
// commits once (one fsync for the batch at synchronous=FULL) and only then
// answers each. A write whose fn fails, panics, or whose caller goes away
// meanwhile is rolled back to its savepoint alone.
type groupCommitter struct {
	client  *ent.Client // batch transactions
	cache   *stmtCache
	queue   chan *writeRequest
	quit    chan struct{}
	stopped chan struct{}
	stop    sync.Once

	// missed lists the statements of the last batch that were not
	// prepared yet; only the writer goroutine touches it.
	missed []string

	commits, committed atomic.Int64 // batches and writes committed
}

// newGroupCommitter starts the writer over drv, the SQLite writer pool's
// driver. Close stops it.
func newGroupCommitter(drv *stmtDriver) *groupCommitter {
	g := &groupCommitter{
		cache:   drv.cache,
		queue:   make(chan *writeRequest, maxBatch),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	g.client = ent.NewClient(ent.Driver(batchDriver{drv, func(q string) {
		if len(g.missed) < maxCachedStmts {
			g.missed = append(g.missed, q)
		}
	}}))
	go g.run()
	return g
}

// close stops the writer after the batch it is running, if any. Writes
// still queued are answered errClosed by their callers.
func (g *groupCommitter) close() {
	g.stop.Do(func() {
		close(g.quit)
		<-g.stopped
	})
}

// do runs fn in the next batch and returns its answer, after the batch
// committed. A caller whose context ends while its write is still queued
// gets the context's error and its write never runs; once the writer has
// taken it, the caller waits for the batch (bounded by maxBatch writes).
func (g *groupCommitter) do(ctx context.Context, fn func(tx *ent.Client) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-g.quit:
		return errClosed
	default:
	}
	r := &writeRequest{ctx: ctx, alone: isAlone(ctx), fn: fn, done: make(chan writeResult, 1)}
	select {
	case g.queue <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.quit:
		return errClosed
	}
	var res writeResult
	select {
	case res = <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return ctx.Err()
		}
		res = <-r.done // taken: the writer answers after its batch
	case <-g.stopped:
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return errClosed
		}
		res = <-r.done
	}
	if res.panicked {
		panic(res.panicVal)
	}
	return res.err
}

func (g *groupCommitter) run() {
	defer close(g.stopped)
	batch := make([]*writeRequest, 0, maxBatch)
	var next *writeRequest // taken from the queue, to run alone next
	for {
		first := next
		next = nil
		if first == nil {
			select {
			case first = <-g.queue:
			case <-g.quit:
				return
			}
		}
		batch = append(batch[:0], first)
	gather:
		for len(batch) < maxBatch && !first.alone {
			select {
			case r := <-g.queue:
				if r.alone {
					next = r
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		g.runBatch(batch)
		clear(batch) // let the answered requests go
		g.prepareMissed()
	}
}

// prepareMissed prepares the statements the last batch ran unprepared,
// now that the connection is free again (preparing inside the batch's
// transaction would wait for the connection the transaction holds). A
// write's statements are therefore parsed once, not once per write.
func (g *groupCommitter) prepareMissed() {
	for _, q := range g.missed {
		g.cache.get(context.Background(), q, true)
	}
	clear(g.missed)
	g.missed = g.missed[:0]
}

// runBatch runs the writes of one batch in one transaction and answers
// every one of them.
func (g *groupCommitter) runBatch(batch []*writeRequest) {
	live := batch[:0]
	for _, r := range batch {
		if !r.state.CompareAndSwap(stateQueued, stateTaken) {
			continue // abandoned by its caller
		}
		if err := r.ctx.Err(); err != nil {
			r.done <- writeResult{err: err}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	// The transaction belongs to no request: one caller's cancellation
	// must not roll back the others' writes.
	bg := context.Background()
	tx, err := g.client.BeginTx(bg, nil)
	if err != nil {
		for _, r := range live {
			r.done <- writeResult{err: err}
		}
		return
	}
	if len(live) == 1 {
		g.runAlone(tx, live[0])
		return
	}
	c := tx.Client()
	results := make([]writeResult, len(live))
	for i, r := range live {
		res, lost := g.runOne(bg, c, r)
		results[i] = res
		if lost != nil {
			// The transaction is gone, and with it the writes before this
			// one: answer them, and those not run yet, so that InTx runs
			// them again. This one has its answer from runOne.
			_ = tx.Rollback()
			for j := range live {
				if j != i && results[j].err == nil && !results[j].panicked {
					results[j] = writeResult{err: &batchAborted{lost}}
				}
			}
			g.answer(live, results)
			return
		}
	}
	// A failed COMMIT fails every write of the batch (the driver rolls
	// the transaction back, so the connection is clean for the next one).
	if err := tx.Commit(); err != nil {
		for i := range results {
			if results[i].err == nil && !results[i].panicked {
				results[i].err = err
			}
		}
	} else {
		g.commits.Add(1)
		g.committed.Add(int64(countOK(results)))
	}
	g.answer(live, results)
}

// runAlone runs the only write of a batch, with no savepoint: undoing it
// is rolling the transaction back. A savepoint would have SQLite copy
// every page the write changes into its sub-journal, which spills to a
// temporary file past a few pages: most of a create's writes to files
// were those copies.
func (g *groupCommitter) runAlone(tx *ent.Tx, r *writeRequest) {
	res := call(tx.Client(), r.fn)
	if res.err == nil && !res.panicked {
		if err := r.ctx.Err(); err != nil {
			res.err = err // as runOne: nobody would hear of the write
		}
	}
	if res.err != nil || res.panicked {
		_ = tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		res.err = err
	} else {
		g.commits.Add(1)
		g.committed.Add(1)
	}
	r.done <- res
}

// runOne runs one write in its own savepoint and returns its answer. When
// the transaction itself was lost (the savepoint could not be set,
// released or rolled back: fn ended the transaction, or SQLite rolled it
// back after an I/O error), it also returns why, and the answer says so.
func (g *groupCommitter) runOne(ctx context.Context, c *ent.Client, r *writeRequest) (res writeResult, lost error) {
	if _, err := c.ExecContext(ctx, savepointBegin); err != nil {
		return writeResult{err: &batchAborted{err}}, err // not run
	}
	res = call(c, r.fn)
	if res.err == nil && !res.panicked {
		if err := r.ctx.Err(); err != nil {
			// The caller went away while its write ran: undo it rather
			// than acknowledge a write nobody will hear about.
			res.err = err
		}
	}
	if res.err != nil || res.panicked {
		if _, err := c.ExecContext(ctx, savepointRollback); err != nil {
			lost = fmt.Errorf("rolling back to the write's savepoint: %w", err)
			res.err = errors.Join(res.err, lost)
			return res, lost
		}
	}
	if _, err := c.ExecContext(ctx, savepointRelease); err != nil {
		lost = fmt.Errorf("releasing the write's savepoint: %w", err)
		res.err = errors.Join(res.err, lost)
		return res, lost
	}
	return res, nil
}

// call runs fn, turning a panic into an answer so that the writer keeps
// going; the caller panics again with the same value.
func call(c *ent.Client, fn func(tx *ent.Client) error) (res writeResult) {
	defer func() {
		if p := recover(); p != nil {
			res = writeResult{panicked: true, panicVal: p}
		}
	}()
	return writeResult{err: fn(c)}
}

func countOK(results []writeResult) (n int) {
	for _, r := range results {
		if r.err == nil && !r.panicked {
			n++
		}
	}
	return n
}

func (g *groupCommitter) answer(live []*writeRequest, results []writeResult) {
	for i, r := range live {
		r.done <- results[i]
	}
}

// batchDriver is the writer pool's driver for batch transactions. A
// write's statements run with its own context, so a statement still
// running at the write's deadline is interrupted: SQLite then rolls back
// the whole transaction, the other writes of the batch included, and
// those are answered batchAborted and run again by InTx (runBatch). No
// write holds the one writer past its deadline.
type batchDriver struct {
	*stmtDriver
	missed func(query string) // told of statements run unprepared
}

// Tx implements dialect.Driver.
func (d batchDriver) Tx(ctx context.Context) (dialect.Tx, error) { return d.BeginTx(ctx, nil) }

// BeginTx starts a batch transaction.
func (d batchDriver) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (dialect.Tx, error) {
	tx, err := d.cache.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &entsql.Tx{Conn: entsql.Conn{ExecQuerier: cachedTx{tx, d.cache, d.missed}}, Tx: tx}, nil
}

// Close leaves the pool to the stmtDriver that owns it.
func (batchDriver) Close() error { return nil }
