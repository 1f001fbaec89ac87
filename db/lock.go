package db

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"
)

// Locks between replicas: named, held on a connection of their own (so a
// transaction's commit does not release them), and released by the
// function they return. On MySQL they are GET_LOCK's, named per database;
// on PostgreSQL advisory locks, which belong to one database; on SQLite,
// which one process serves, a mutex of the process.

// processLocks are SQLite's locks, by database file and name.
var processLocks sync.Map // string -> *sync.Mutex

// lock waits up to wait for the lock name and returns what releases it.
func (d *DB) lock(ctx context.Context, name string, wait time.Duration) (release func(), err error) {
	release, ok, err := d.takeLock(ctx, name, wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("another replica held the lock %q for over %s", name, wait)
	}
	return release, nil
}

// tryLock takes the lock name if nobody holds it, and reports whether it
// did.
func (d *DB) tryLock(ctx context.Context, name string) (release func(), ok bool, err error) {
	return d.takeLock(ctx, name, 0)
}

func (d *DB) takeLock(ctx context.Context, name string, wait time.Duration) (func(), bool, error) {
	switch {
	case d.SQLite():
		return processLock(ctx, d.path+"\x00"+name, wait)
	case d.MySQL():
		return d.mysqlLock(ctx, name, wait)
	}
	return d.postgresLock(ctx, name, wait)
}

func processLock(ctx context.Context, key string, wait time.Duration) (func(), bool, error) {
	v, _ := processLocks.LoadOrStore(key, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	deadline := time.Now().Add(wait)
	for !mu.TryLock() {
		if !time.Now().Before(deadline) {
			return nil, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return mu.Unlock, true, nil
}

func (d *DB) mysqlLock(ctx context.Context, name string, wait time.Duration) (func(), bool, error) {
	conn, err := d.writeDB.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var got *int64
	err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('personnel.', ?, '.', DATABASE()), ?)", name, int(wait.Seconds())).Scan(&got)
	if err != nil || got == nil || *got != 1 {
		conn.Close()
		return nil, false, err
	}
	return func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(CONCAT('personnel.', ?, '.', DATABASE()))", name)
		conn.Close()
	}, true, nil
}

func (d *DB) postgresLock(ctx context.Context, name string, wait time.Duration) (func(), bool, error) {
	conn, err := d.writeDB.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	h := fnv.New64a()
	h.Write([]byte("personnel." + name))
	key := int64(h.Sum64())
	ok := false
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		// pgx gives up a statement whose context ends by closing its
		// connection, which ends the wait on the server too.
		_, err = conn.ExecContext(wctx, "SELECT pg_advisory_lock($1)", key)
		ok = err == nil
		if errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = nil
		}
	} else {
		err = conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok)
	}
	if err != nil || !ok {
		conn.Close()
		return nil, false, err
	}
	return func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
		conn.Close()
	}, true, nil
}
