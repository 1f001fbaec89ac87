package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"personnel/ent"
)

// InTx runs fn in a write transaction and commits it when fn returns nil;
// when fn returns an error (or panics, and InTx panics again), nothing fn
// wrote is kept.
//
// On SQLite, which has one writer, concurrent calls are committed together
// (group commit, groupcommit.go): a nil error still means the write is on
// disk. fn must run its statements on the Tx it is given (a second InTx
// inside fn waits for itself) and must not end the transaction itself.
//
// A transaction the database aborted (a deadlock, a lock wait that timed
// out, a serialization failure or write conflict, a SQLite batch lost
// through no fault of this write) is run again, so fn must not keep state
// across calls. Retries back off, with jitter, over most of the time the
// request has left (or PERSONNEL_DB_TIMEOUT without a deadline); when
// they run out the answer is a *BusyError.
func (d *DB) InTx(ctx context.Context, fn func(tx Tx) error) error {
	budget := d.timeout
	if budget <= 0 {
		budget = 5 * time.Second
	}
	until := time.Now().Add(budget * 4 / 5)
	if deadline, ok := ctx.Deadline(); ok {
		until = deadline.Add(-time.Until(deadline) / 5)
	}
	backoff := 2 * time.Millisecond
	for {
		err := d.tryTx(ctx, fn)
		var aborted *batchAborted
		if err == nil || !IsRetryable(err) && !errors.As(err, &aborted) {
			return err
		}
		// A random pause of about backoff, doubling up to maxBackoff, so
		// that the writers that collided do not collide again.
		pause := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
		if time.Now().Add(pause).After(until) {
			return &BusyError{Cause: err}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// maxBackoff bounds the pause between two runs of an aborted transaction.
const maxBackoff = 200 * time.Millisecond

// BusyError is the answer to a write the database kept aborting (to break
// deadlocks, or on write conflicts) until the time for retries ran out:
// the database is busy, not unavailable, and the write may succeed if
// sent again.
type BusyError struct{ Cause error }

func (e *BusyError) Error() string {
	return "db: the write was aborted by the database every time it ran: " + e.Cause.Error()
}

func (e *BusyError) Unwrap() error { return e.Cause }

func (d *DB) tryTx(ctx context.Context, fn func(tx Tx) error) (err error) {
	if d.group != nil {
		return d.group.do(ctx, func(c *ent.Client) error { return fn(EntTx{c}) })
	}
	// MySQL and PostgreSQL connections are READ COMMITTED from the start
	// (openMySQL, openPostgres).
	var tx *ent.Tx
	var pipe *pipeTx
	switch {
	case d.pipelined && d.Postgres():
		var release func()
		if tx, pipe, release, err = d.beginPG(ctx); err != nil {
			return err
		}
		defer release()
	default:
		if tx, err = d.write.BeginTx(ctx, nil); err != nil {
			return err
		}
		if d.pipelined {
			pipe = &pipeTx{EntTx: EntTx{tx.Client()}}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	var wtx Tx = EntTx{tx.Client()}
	if pipe != nil {
		wtx = pipe
	}
	err = fn(wtx)
	if err == nil && pipe != nil {
		err = pipe.flush(ctx)
	}
	if err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, stdsql.ErrTxDone) {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit()
}

// SQLTx adapts a database/sql transaction to a Tx.
type SQLTx struct{ *stdsql.Tx }

// Query runs a query in the transaction.
func (t SQLTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return t.QueryContext(ctx, query, args...)
}

// InEntTx is InTx for code that writes through Ent's typed client (the
// users and their tokens): fn gets the transaction's client.
func (d *DB) InEntTx(ctx context.Context, fn func(c *ent.Client) error) error {
	return d.InTx(ctx, func(tx Tx) error {
		if p, ok := tx.(*pipeTx); ok {
			// fn writes through Ent, which nothing holds statements for.
			return fn(p.Client)
		}
		return fn(tx.(EntTx).Client)
	})
}

// InSnapshot runs fn in a read-only transaction of the read pool, every
// statement of which sees the database as its first one did: a read made
// of many statements (an export, a batch at a time) then holds each record
// once and as it was at one moment, whatever is written meanwhile, and a
// parent's code read in a later batch is the one its children were read
// with. On MySQL and PostgreSQL that is REPEATABLE READ (their
// connections are otherwise READ COMMITTED); on SQLite a read transaction
// on a reader, which WAL keeps on the snapshot it first read. While fn
// runs, the database keeps the row versions that snapshot sees (MySQL's
// undo log, PostgreSQL's dead rows, SQLite's WAL frames), so it is for
// reads that end, not for one held open.
func (d *DB) InSnapshot(ctx context.Context, fn func(tx Tx) error) error {
	opts := &stdsql.TxOptions{Isolation: stdsql.LevelRepeatableRead, ReadOnly: true}
	if d.SQLite() {
		// Readers are read-only connections already, and SQLite knows no
		// isolation levels to ask for.
		opts = nil
	}
	tx, err := d.read.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(EntTx{tx.Client()}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
