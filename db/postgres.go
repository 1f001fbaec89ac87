package db

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"personnel/ent"
)

// openPostgres opens one pool over pgx's database/sql driver. pgx prepares
// each distinct statement once per connection and keeps it (its default
// statement cache), which is what the SQLite statement cache does by hand.
// With pipelined, a write holds a connection of the pool for its
// transaction and sends its keepers' statements as pgx batches (beginPG).
func openPostgres(ctx context.Context, dsn string, conns int, timeout time.Duration, pipelined bool) (*DB, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message names the problem with the password redacted.
		return nil, fmt.Errorf("PERSONNEL_DB_DSN: %w", err)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 5 * time.Second
	}
	// Every connection runs at READ COMMITTED whatever the server's or the
	// role's default (each check that needs a stable view takes row locks,
	// as on MySQL), and in UTC, as the MySQL connections do. Both are sent
	// in the start-up message, so they cost no round trip; a DSN that sets
	// them (options or the parameter itself) wins.
	// A statement outlives its request by at most a second: pgx cancels a
	// statement whose context ends, and statement_timeout bounds one that
	// a lost cancel request would leave running.
	params := map[string]string{"default_transaction_isolation": "read committed", "timezone": "UTC",
		"statement_timeout": strconv.FormatInt((timeout + time.Second).Milliseconds(), 10)}
	for param, value := range params {
		if _, set := cc.RuntimeParams[param]; !set {
			cc.RuntimeParams[param] = value
		}
	}
	where := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	sqlDB := stdlib.OpenDB(*cc)
	if conns <= 0 {
		conns = 16
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	// Recycle connections so a failover or DNS change is picked up.
	sqlDB.SetConnMaxLifetime(5 * time.Minute)
	var version string
	if err := sqlDB.QueryRowContext(ctx, "SELECT current_setting('server_version')").Scan(&version); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", where, err)
	}
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.Postgres, sqlDB)))
	return &DB{
		Dialect:   dialect.Postgres,
		Flavor:    "postgres",
		Version:   version,
		server:    "postgres",
		read:      client,
		write:     client,
		readDB:    sqlDB,
		writeDB:   sqlDB,
		pipelined: pipelined,
	}, nil
}
