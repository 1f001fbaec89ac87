package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"sync"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/go-sql-driver/mysql"
)

// Statement cache bounds: texts longer than maxCachedQuery (bulk inserts)
// are not worth keeping, and at most maxCachedStmts are kept.
const (
	maxCachedQuery = 2048
	maxCachedStmts = 512
)

// stmtCache prepares each distinct SQL text once and keeps it. SQLite
// spends about as long parsing a short query as running it, and MySQL runs
// a prepared statement with the binary protocol and no parsing;
// database/sql re-prepares a kept statement on each pool connection as
// needed, and closes a connection's statements with the connection.
//
// A kept statement exists at most once on each connection, so a pool
// holds at most limit statements per connection on the server.
type stmtCache struct {
	db    *stdsql.DB
	limit int
	mu    sync.RWMutex
	stmts map[string]*stdsql.Stmt
	// mysql: the cache is MySQL's (mysqlStmtCache), whose texts are
	// prepared only for queries outside a transaction, from their second
	// run on, and are run plainly when the server refuses to prepare them.
	mysql bool
	// seen are the texts run once and not prepared yet (mysql only):
	// a text run once (a bulk insert's, a one-off search's) would
	// otherwise take a place in the cache that a read by id needs.
	seen map[string]struct{}
	// refused are the texts the server would not prepare (mysql only):
	// they run plainly from then on, without a prepare tried each time.
	refused map[string]struct{}
}

// mysqlStmtCache returns the statement cache of a MySQL pool of conns
// connections whose server allows maxPrepared statements in all (its
// max_prepared_stmt_count; negative when unlimited, as on TiDB). A
// replica keeps at most a quarter of them, the rest being for other
// replicas and clients; when the server runs out all the same, the
// statements run plainly (errMaxPrepared).
func mysqlStmtCache(db *stdsql.DB, conns, maxPrepared int) *stmtCache {
	limit := mysqlMaxCachedStmts
	if maxPrepared >= 0 {
		limit = min(limit, maxPrepared/(4*max(conns, 1)))
	}
	return &stmtCache{db: db, limit: limit, stmts: map[string]*stdsql.Stmt{}, mysql: true,
		seen: map[string]struct{}{}, refused: map[string]struct{}{}}
}

// mysqlMaxCachedStmts bounds the statements a MySQL pool keeps per
// connection: far more than the distinct texts of the reads a busy
// service repeats, far fewer than a server's max_prepared_stmt_count.
const mysqlMaxCachedStmts = 256

// errMaxPrepared reports whether err is MySQL's refusal to prepare one
// more statement (max_prepared_stmt_count reached, by any client). It can
// only come from the prepare, before the statement ran, so the statement
// may then run plainly.
func errMaxPrepared(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED
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
	full := len(c.stmts) >= c.limit
	c.mu.RUnlock()
	if st != nil || !prepare || full {
		return st
	}
	if c.mysql && !c.secondRun(query) {
		return nil
	}
	// Prepared without holding the lock: preparing waits for a connection
	// of the pool, which (SQLite's writer) a batch may hold while its
	// statements look in the cache.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		// The server's answer, not a lost connection, nor a shortage of
		// statements that may pass.
		var refusal *mysql.MySQLError
		if c.mysql && errors.As(err, &refusal) && !errMaxPrepared(err) {
			c.mu.Lock()
			if len(c.refused) < maxCachedStmts {
				c.refused[query] = struct{}{}
			}
			c.mu.Unlock()
		}
		return nil // let the plain call report the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if have := c.stmts[query]; have != nil || len(c.stmts) >= c.limit {
		st.Close()
		return have
	}
	c.stmts[query] = st
	return st
}

// secondRun reports whether query is to be prepared now: it was run
// before and the server has not refused it. It remembers a text run for
// the first time, forgetting them all when too many wait.
func (c *stmtCache) secondRun(query string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, refused := c.refused[query]; refused {
		return false
	}
	if _, again := c.seen[query]; again {
		delete(c.seen, query)
		return true
	}
	if len(c.seen) >= maxCachedStmts {
		clear(c.seen)
	}
	c.seen[query] = struct{}{}
	return false
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

// On MySQL only queries are prepared: a write outside a transaction is
// a bulk load's or a maintenance statement's, run once.
func (q cachedDB) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	if st := q.c.get(ctx, query, !q.c.mysql); st != nil {
		res, err := st.ExecContext(ctx, args...)
		if err == nil || !errMaxPrepared(err) {
			return res, err
		}
	}
	return q.c.db.ExecContext(ctx, query, args...)
}

func (q cachedDB) QueryContext(ctx context.Context, query string, args ...any) (*stdsql.Rows, error) {
	if st := q.c.get(ctx, query, true); st != nil {
		rows, err := st.QueryContext(ctx, args...)
		if err == nil || !errMaxPrepared(err) {
			return rows, err
		}
		// Not prepared on the connection it got: the server holds as
		// many statements as it allows. Run plainly, as without the cache.
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
	return newCacheDriver(dialectName, &stmtCache{db: db, limit: maxCachedStmts, stmts: map[string]*stdsql.Stmt{}})
}

func newCacheDriver(dialectName string, c *stmtCache) *stmtDriver {
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
	if d.cache.mysql {
		// Interpolated, as without the cache: a statement prepared on the
		// transaction's connection could be refused mid-transaction, and
		// most statements of a write run once in it.
		return &entsql.Tx{Conn: entsql.Conn{ExecQuerier: tx}, Tx: tx}, nil
	}
	return &entsql.Tx{Conn: entsql.Conn{ExecQuerier: cachedTx{tx: tx, c: d.cache}}, Tx: tx}, nil
}

// Close closes the statements and the pool.
func (d *stmtDriver) Close() error {
	d.cache.close()
	return d.cache.db.Close()
}
