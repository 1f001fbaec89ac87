package db

import (
	"context"
	stdsql "database/sql"
	"sync/atomic"
)

// Counting statements: a test that bounds how many statements a request
// costs (an expanded list: one more a field, not one more a record) counts
// those run through a Tx with a context from CountStatements. Nothing is
// counted, and nothing looked up, until a counter exists.

type counterKey struct{}

// counting is set once any counter exists, so that statements look in
// their context only then.
var counting atomic.Bool

// CountStatements returns ctx with a counter of the statements run with it
// (or a context made from it) through a Tx: Reader's and InTx's.
func CountStatements(ctx context.Context) (context.Context, *atomic.Int64) {
	n := &atomic.Int64{}
	counting.Store(true)
	return context.WithValue(ctx, counterKey{}, n), n
}

// count adds a statement to ctx's counter, if it has one.
func count(ctx context.Context) {
	if !counting.Load() {
		return
	}
	if n, ok := ctx.Value(counterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

// ExecContext runs a statement in the transaction.
func (t EntTx) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	count(ctx)
	return t.Client.ExecContext(ctx, query, args...)
}
