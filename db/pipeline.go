package db

import (
	"context"
	stdsql "database/sql"
	"database/sql/driver"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"personnel/ent"
)

// Pipelined writes: on MySQL and PostgreSQL every statement is a round
// trip, and a write's round trips, not its rows, are most of what it costs
// the server and the database (docs/performance-part-three.md). Most of a
// keeper's statements return nothing the write needs (a count upserted,
// a feed or audit entry appended), so a keeper hands them to execLater,
// which holds them in the write's pipeTx. They are sent together, in one
// round trip, with the next statement the write runs (whose answer is then
// the last one's) or, when nothing follows, before the transaction
// commits. The statements run in the order they were given, each seeing
// what the ones before it wrote, exactly as one at a time; an error from
// any of them is the error of the statement that sent them, and undoes
// the write.
//
// MySQL sends them as one text, which a connection runs only if it asked
// for it (the driver's multiStatements, set in openMySQL); the arguments
// are interpolated and escaped by the driver, as every statement's already
// are. PostgreSQL sends them as a pgx batch: each statement prepared once
// per connection and kept, as pgx keeps every other, and all of them
// executed in one round trip. pgx batches need pgx's own connection, so a
// pipelined write on PostgreSQL holds a connection of the pool for its
// transaction (beginPG).

// pipeLimit bounds the text (and an estimate of its arguments) held for
// one round trip, well within MySQL's max_allowed_packet: a bulk load's
// large statements go one or a few at a time.
const pipeLimit = 1 << 20

// pipeTx is a write's transaction on MySQL or PostgreSQL, holding the
// statements execLater was given until the next statement or the end of
// the write.
type pipeTx struct {
	EntTx
	// conn is the PostgreSQL connection the transaction runs on; nil on
	// MySQL.
	conn *stdsql.Conn
	held []heldStmt
	size int // the texts' length and an estimate of their arguments'
}

// heldStmt is a statement a pipeTx holds.
type heldStmt struct {
	query string
	args  []any
}

// execLater runs query in tx: in the next round trip of a pipelined write,
// or now in any other transaction (SQLite's, a bulk load's COPY).
func execLater(ctx context.Context, tx Tx, query string, args ...any) error {
	p, ok := tx.(*pipeTx)
	if !ok {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}
	count(ctx)
	size := len(query) + argsSize(args)
	if len(p.held) > 0 && p.size+size > pipeLimit {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	p.held = append(p.held, heldStmt{query, args})
	p.size += size
	return nil
}

// ExecContext runs query after the statements held, in the same round
// trip; the result is query's.
func (p *pipeTx) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	if len(p.held) == 0 {
		return p.EntTx.ExecContext(ctx, query, args...)
	}
	count(ctx)
	p.held = append(p.held, heldStmt{query, args})
	return p.send(ctx)
}

// Query runs query once the statements held have run: a query's rows
// do not share a round trip with them.
func (p *pipeTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	return p.EntTx.Query(ctx, query, args...)
}

// flush runs the statements held, if any.
func (p *pipeTx) flush(ctx context.Context) error {
	if len(p.held) == 0 {
		return nil
	}
	_, err := p.send(ctx)
	return err
}

// send runs the statements held in one round trip and forgets them; the
// result is the last one's.
func (p *pipeTx) send(ctx context.Context) (stdsql.Result, error) {
	held := p.held
	p.held, p.size = nil, 0
	if p.conn == nil {
		var text strings.Builder
		var args []any
		for i, h := range held {
			if i > 0 {
				text.WriteString(";\n")
			}
			text.WriteString(h.query)
			args = append(args, h.args...)
		}
		return p.Client.ExecContext(ctx, text.String(), args...)
	}
	var res driver.Result
	err := p.conn.Raw(func(dc any) error {
		b := &pgx.Batch{}
		for _, h := range held {
			b.Queue(h.query, h.args...)
		}
		br := dc.(*stdlib.Conn).Conn().SendBatch(ctx, b)
		for range held {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close()
				return err
			}
			res = driver.RowsAffected(tag.RowsAffected())
		}
		return br.Close()
	})
	return res, err
}

// beginPG begins a pipelined write's transaction on PostgreSQL, on a
// connection of the pool held until release is called, after the
// transaction ends.
func (d *DB) beginPG(ctx context.Context) (tx *ent.Tx, pipe *pipeTx, release func(), err error) {
	conn, err := d.writeDB.Conn(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tx, err = ent.NewClient(ent.Driver(connDriver{entsql.Conn{ExecQuerier: conn}, conn})).BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	return tx, &pipeTx{EntTx: EntTx{tx.Client()}, conn: conn}, func() { conn.Close() }, nil
}

// connDriver is an Ent driver whose statements and transactions run on
// one connection, conn, which the embedded Conn runs them on.
type connDriver struct {
	entsql.Conn
	conn *stdsql.Conn
}

// Tx implements dialect.Driver.
func (d connDriver) Tx(ctx context.Context) (dialect.Tx, error) { return d.BeginTx(ctx, nil) }

// BeginTx begins a transaction on the connection.
func (d connDriver) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (dialect.Tx, error) {
	tx, err := d.conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &entsql.Tx{Conn: entsql.Conn{ExecQuerier: tx}, Tx: tx}, nil
}

// Dialect implements dialect.Driver.
func (connDriver) Dialect() string { return dialect.Postgres }

// Close leaves the connection to beginPG's release.
func (connDriver) Close() error { return nil }

// argsSize estimates how long args are once written into a text.
func argsSize(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += 2 * len(v)
		case []byte:
			n += 2 * len(v)
		case []string:
			for _, s := range v {
				n += 2*len(s) + 3
			}
		case []int64:
			n += 21 * len(v)
		case []int16:
			n += 7 * len(v)
		default:
			n += 24
		}
	}
	return n
}
