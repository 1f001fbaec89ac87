package db

import (
	"context"
	stdsql "database/sql"
	"sync"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// Statement cache bounds: texts longer than maxCachedQuery (bulk inserts)
// are not worth keeping, and at most maxCachedStmts are kept.
const (
	maxCachedQuery = 2048
	maxCachedStmts = 512
)

// stmtCache prepares each distinct SQL text once and keeps it. SQLite
// spends about as long parsing a short query as running it; database/sql
// re-prepares a kept statement on each pool connection as needed.
type stmtCache struct {
	db    *stdsql.DB
	mu    sync.RWMutex
	stmts map[string]*stdsql.Stmt
}

// get returns the prepared statement of query, preparing it when prepare
// is true. Inside a transaction prepare must be false: preparing takes a
// connection from the pool, and the transaction may hold the only one
// (SQLite's writer), which would wait for itself.
func (c *stmtCache) get(ctx context.Context, query string, prepare bool) *stdsql.Stmt {
	if len(query) > maxCachedQuery {
		return nil
	}
	c.mu.RLock()
	st := c.stmts[query]
	c.mu.RUnlock()
	if st != nil || !prepare {
		return st
	}
	// Prepared without holding the lock: preparing waits for a connection
	// of the pool, which (SQLite's writer) a batch may hold while its
	// statements look in the cache.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // let the plain call report the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if have := c.stmts[query]; have != nil || len(c.stmts) >= maxCachedStmts {
		st.Close()
		return have
	}
	c.stmts[query] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	clear(c.stmts)
}

// cachedDB runs statements on the pool through the cache.
type cachedDB struct{ c *stmtCache }

func (q cachedDB) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	if st := q.c.get(ctx, query, true); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.c.db.ExecContext(ctx, query, args...)
}

func (q cachedDB) QueryContext(ctx context.Context, query string, args ...any) (*stdsql.Rows, error) {
	if st := q.c.get(ctx, query, true); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.c.db.QueryContext(ctx, query, args...)
}

// cachedTx runs statements in a transaction through the cache, using the
// statements already prepared and running the others plainly. missed, when
// set, is told of each cacheable statement that was not prepared yet, so
// that the caller can prepare it once the transaction has given the
// connection back (SQLite's batch writer does).
type cachedTx struct {
	tx     *stdsql.Tx
	c      *stmtCache
	missed func(query string)
}

func (q cachedTx) stmt(ctx context.Context, query string) *stdsql.Stmt {
	st := q.c.get(ctx, query, false)
	if st == nil && q.missed != nil && len(query) <= maxCachedQuery {
		q.missed(query)
	}
	return st
}

func (q cachedTx) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	if st := q.stmt(ctx, query); st != nil {
		return q.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return q.tx.ExecContext(ctx, query, args...)
}

func (q cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*stdsql.Rows, error) {
	if st := q.stmt(ctx, query); st != nil {
		return q.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return q.tx.QueryContext(ctx, query, args...)
}

// stmtDriver is an ent driver whose statements go through a stmtCache. It
// stands in for entsql.Driver, whose transactions assume a bare *sql.DB.
type stmtDriver struct {
	entsql.Conn
	cache   *stmtCache
	dialect string
}

func newStmtDriver(dialectName string, db *stdsql.DB) *stmtDriver {
	c := &stmtCache{db: db, stmts: map[string]*stdsql.Stmt{}}
	return &stmtDriver{Conn: entsql.Conn{ExecQuerier: cachedDB{c}}, cache: c, dialect: dialectName}
}

// DB returns the pool, for ent's migrations.
func (d *stmtDriver) DB() *stdsql.DB { return d.cache.db }

// Dialect implements dialect.Driver.
func (d *stmtDriver) Dialect() string { return d.dialect }

// Tx implements dialect.Driver.
func (d *stmtDriver) Tx(ctx context.Context) (dialect.Tx, error) { return d.BeginTx(ctx, nil) }

// BeginTx starts a transaction whose statements also use the cache.
func (d *stmtDriver) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (dialect.Tx, error) {
	tx, err := d.cache.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &entsql.Tx{Conn: entsql.Conn{ExecQuerier: cachedTx{tx: tx, c: d.cache}}, Tx: tx}, nil
}

// Close closes the statements and the pool.
func (d *stmtDriver) Close() error {
	d.cache.close()
	return d.cache.db.Close()
}
