package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// CopyTx is a PostgreSQL transaction opened through pgx's own interface
// rather than database/sql's, for bulk loads: it can stream rows with COPY,
// PostgreSQL's fast path for loading many rows, which database/sql cannot
// reach. It is a Tx, so every keeper of the table writes in it too (and
// those that insert many rows stream them as well).
type CopyTx struct {
	tx pgx.Tx
}

// InCopyTx runs fn in a transaction on one PostgreSQL connection and
// commits it when fn returns nil; otherwise nothing fn wrote is kept. It is
// for bulk loads only: it neither retries nor takes part in the request
// deadline, and its statements have no time limit.
func (d *DB) InCopyTx(ctx context.Context, fn func(tx *CopyTx) error) error {
	if !d.Postgres() {
		return errors.New("InCopyTx: COPY is PostgreSQL's")
	}
	conn, err := d.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("InCopyTx: a %T is not a pgx connection", driverConn)
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return errors.Join(err, tx.Rollback(context.WithoutCancel(ctx)))
		}
		if err := fn(&CopyTx{tx: tx}); err != nil {
			return errors.Join(err, tx.Rollback(context.WithoutCancel(ctx)))
		}
		return tx.Commit(ctx)
	})
}

// ExecContext runs a statement in the transaction.
func (t *CopyTx) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return copyResult(tag), nil
}

// Query runs a query in the transaction.
func (t *CopyTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

// CopyFrom streams rows into columns of table with COPY and returns how
// many it wrote. Each row holds one value per column, of a Go type pgx
// encodes for the column's type (int64, string, bool, nil for null).
func (t *CopyTx) CopyFrom(ctx context.Context, table string, columns []string, rows [][]any) (int64, error) {
	return t.tx.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(rows))
}

// pgxRows are pgx's rows as Rows.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// copyResult is the result of a statement run through pgx.
type copyResult pgconn.CommandTag

// LastInsertId implements sql.Result: PostgreSQL has none (use RETURNING).
func (copyResult) LastInsertId() (int64, error) {
	return 0, errors.New("PostgreSQL has no last insert id")
}

// RowsAffected implements sql.Result.
func (r copyResult) RowsAffected() (int64, error) { return pgconn.CommandTag(r).RowsAffected(), nil }
