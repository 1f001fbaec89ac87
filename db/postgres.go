package db

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"personnel/ent"
)

// openPostgres opens one pool over pgx's database/sql driver. pgx prepares
// each distinct statement once per connection and keeps it (its default
// statement cache), which is what the SQLite statement cache does by hand.
func openPostgres(ctx context.Context, dsn string, conns int) (*DB, error) {
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
	for param, value := range map[string]string{"default_transaction_isolation": "read committed", "timezone": "UTC"} {
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
		Dialect: dialect.Postgres,
		Flavor:  "postgres",
		Version: version,
		server:  "postgres",
		read:    client,
		write:   client,
		readDB:  sqlDB,
		writeDB: sqlDB,
	}, nil
}

// postgresMigrateLock is the key of the advisory lock PostgreSQL
// migrations hold ("personel" in ASCII). Advisory locks belong to one
// database, so services sharing a server but not a database do not wait
// for each other.
const postgresMigrateLock int64 = 0x706572736f6e656c

// lockPostgresMigration takes the migration lock on a connection of its
// own, waiting up to migrateLockWait for another replica's migration, and
// returns what releases it.
func (d *DB) lockPostgresMigration(ctx context.Context) (release func(), err error) {
	conn, err := d.writeDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, migrateLockWait*time.Second)
	defer cancel()
	// pgx gives up a statement whose context ends by closing its
	// connection, which ends the wait (and the session) on the server too.
	if _, err := conn.ExecContext(wait, "SELECT pg_advisory_lock($1)", postgresMigrateLock); err != nil {
		conn.Close()
		if errors.Is(wait.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("another replica held the migration lock for over %d seconds", migrateLockWait)
		}
		return nil, fmt.Errorf("taking the migration lock: %w", err)
	}
	return func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", postgresMigrateLock)
		conn.Close()
	}, nil
}

// withCCollation gives every text column the "C" collation: comparison
// and ordering by code point (UTF-8 byte order) as on SQLite and MySQL's
// binary collations, whatever locale the server or database was created
// with, and no padding ('HR' and 'HR ' differ). Indexes on those columns
// inherit it, so they serve the service's ordering.
//
// ent's table definitions are package globals, and a copied table shares
// its columns (and ent's private column index) with the original, so the
// collation is set on the columns themselves for this migration and reset
// afterwards; migrateMu keeps every other migration out meanwhile.
func withCCollation() schema.Hook {
	return func(next schema.Creator) schema.Creator {
		return schema.CreateFunc(func(ctx context.Context, tables ...*schema.Table) error {
			var set []*schema.Column
			for _, t := range tables {
				for _, c := range t.Columns {
					if c.Type == field.TypeString && c.Collation == "" {
						c.Collation = "C"
						set = append(set, c)
					}
				}
			}
			defer func() {
				for _, c := range set {
					c.Collation = ""
				}
			}()
			return next.Create(ctx, tables...)
		})
	}
}
