package db

import (
	"context"
	stdsql "database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// On MySQL, MariaDB and TiDB a statement whose request has ended is
// killed. The driver gives up on it by closing its connection, but the
// server goes on running the statement (and holding its locks) until it
// next tries to send something; so every connection knows its server-side
// id, and when the context of a statement running on it ends, KILL QUERY
// is sent for it on a connection of its own. (A connection-wide
// max_statement_time could not follow each request's own deadline.)

// killConnector makes connections that kill their running statement when
// its context ends.
type killConnector struct {
	driver.Connector
	killer *stdsql.DB // a small pool of its own, for the KILL statements
	kill   string     // the statement, with the connection id as its one argument
}

func newKillConnector(c driver.Connector, server string) *killConnector {
	killer := stdsql.OpenDB(c)
	killer.SetMaxOpenConns(2)
	killer.SetMaxIdleConns(1)
	killer.SetConnMaxIdleTime(time.Minute)
	kill := "KILL QUERY ?"
	if server == "tidb" {
		kill = "KILL TIDB QUERY ?"
	}
	return &killConnector{Connector: c, killer: killer, kill: kill}
}

// Connect opens a connection and asks the server its id.
func (k *killConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := k.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	q, ok := c.(driver.QueryerContext)
	if !ok {
		c.Close()
		return nil, errors.New("db: the MySQL driver's connection cannot run queries")
	}
	rows, err := q.QueryContext(ctx, "SELECT CONNECTION_ID()", nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	row := make([]driver.Value, 1)
	err = rows.Next(row)
	rows.Close()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("db: reading the connection id: %w", err)
	}
	var id int64
	switch v := row[0].(type) {
	case int64:
		id = v
	case uint64:
		id = int64(v)
	case []byte:
		fmt.Sscan(string(v), &id)
	}
	return &killConn{Conn: c, id: id, k: k}, nil
}

// watch kills the statement running on c if ctx ends before the returned
// function is called. The connection is then never used again (a KILL
// sent as the statement ended would otherwise hit the next one).
func (c *killConn) watch(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	kill := func() {
		c.killed.Store(true)
		kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = c.k.killer.ExecContext(kctx, c.k.kill, c.id)
	}
	stopKill := context.AfterFunc(ctx, kill)
	return func() {
		// A context closes its Done channel before it starts what
		// AfterFunc registered: the driver may see the end, give up on
		// the statement and return before the kill has started, and
		// stopping it then keeps it from ever running while the server
		// still runs the statement. So it runs here.
		if stopKill() && ctx.Err() != nil {
			kill()
		}
	}
}

// killConn is a driver connection whose statements are killed when their
// context ends. It passes everything else to the driver's connection.
type killConn struct {
	driver.Conn
	id     int64
	k      *killConnector
	killed atomic.Bool
}

func (c *killConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	defer c.watch(ctx)()
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *killConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	defer c.watch(ctx)()
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *killConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &killStmt{Stmt: st, c: c}, nil
}

func (c *killConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *killConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *killConn) ResetSession(ctx context.Context) error {
	if c.killed.Load() {
		return driver.ErrBadConn
	}
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *killConn) IsValid() bool { return !c.killed.Load() && c.Conn.(driver.Validator).IsValid() }

func (c *killConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// killStmt is a prepared statement of a killConn.
type killStmt struct {
	driver.Stmt
	c *killConn
}

func (s *killStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	defer s.c.watch(ctx)()
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *killStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	defer s.c.watch(ctx)()
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *killStmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.Stmt.(driver.NamedValueChecker).CheckNamedValue(nv)
}
