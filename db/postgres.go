package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
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

// createTrigram is the statement that makes pg_trgm available, which a
// database administrator can run when the service's role may not.
const createTrigram = "CREATE EXTENSION IF NOT EXISTS pg_trgm"

// ensureTrigramIndexes gives every searched (folded) column of every
// resource table a trigram GIN index, with which PostgreSQL answers
// LIKE '%...%' without reading the whole table. pg_trgm ships with
// PostgreSQL's contrib package and is a trusted extension (any role that
// may create objects in the database may create it); when it cannot be
// created the service still starts, warns once, and searches by scan, the
// LIKE giving the same answers either way.
func (d *DB) ensureTrigramIndexes(ctx context.Context) error {
	w := d.Write()
	if _, err := w.ExecContext(ctx, createTrigram); err != nil {
		if IsUnavailable(err) {
			return err
		}
		slog.Warn("substring search (_icontains) will scan whole tables: the pg_trgm extension could not be created; "+
			"a database administrator can run the statement in this database, and the next start adds the indexes",
			"statement", createTrigram+";", "error", err)
		return nil
	}
	for _, c := range ent.ResourceTables() {
		// CREATE INDEX takes a lock that holds writes back even when the
		// index exists; replicas serving writes while another starts are
		// spared it by looking first.
		have, err := d.TrigramIndexes(ctx, c.Table)
		if err != nil {
			return err
		}
		for _, col := range c.Search {
			if slices.Contains(have, trigramIndex(c.Table, col)) {
				continue
			}
			s := (&SQL{postgres: true}).Raw("CREATE INDEX IF NOT EXISTS ").Ident(trigramIndex(c.Table, col)).
				Raw(" ON ").Ident(c.Table).Raw(" USING gin (").Ident(col).Raw(" gin_trgm_ops)")
			if _, err := w.ExecContext(ctx, s.String()); err != nil {
				return fmt.Errorf("%s: %w", s.String(), err)
			}
		}
	}
	return nil
}

// trigramIndex names the trigram index of column in table, within
// PostgreSQL's 63 bytes (a longer name would be cut short silently, and
// two cut alike would make the second CREATE INDEX IF NOT EXISTS a no-op).
func trigramIndex(table, column string) string {
	name := table + "_" + column + "_trgm"
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:63-17] + "_" + hex.EncodeToString(sum[:8])
}

// TrigramIndexes returns the names of the trigram indexes on table that
// exist, for tests and diagnostics; it is empty on other databases.
func (d *DB) TrigramIndexes(ctx context.Context, table string) ([]string, error) {
	if !d.Postgres() {
		return nil, nil
	}
	rows, err := d.readDB.QueryContext(ctx,
		"SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 AND indexdef LIKE '%gin_trgm_ops%' ORDER BY indexname", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
