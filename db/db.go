// Package db opens Personnel's database, embedded SQLite, MySQL/MariaDB
// (TiDB included) or PostgreSQL, migrates its schema, runs write transactions, and tells the rest of the
// service what a driver error means (duplicate key, foreign key, retry,
// database unavailable) without anyone matching driver messages.
package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"personnel/config"
	"personnel/ent"
)

// DB is an open database: ent clients for reading and writing, and what
// kind of server is behind them.
type DB struct {
	// Dialect is dialect.SQLite, dialect.MySQL (MariaDB and TiDB
	// included) or dialect.Postgres.
	Dialect string
	// Flavor is "sqlite", "mysql", "mariadb", "tidb" or "postgres": the
	// server detected, or the MySQL flavour PERSONNEL_DB_FLAVOR forces. It
	// decides how the service behaves (which row locks it takes).
	Flavor string
	// Version is the server's version string.
	Version string

	// server is the flavour detected from Version, whatever was forced:
	// what the server itself accepts (session variables, collations)
	// depends on it.
	server string

	read, write     *ent.Client
	readDB, writeDB *stdsql.DB
	// MoveLimit is the most closure rows a move may rewrite
	// (PERSONNEL_MOVE_LIMIT); 0: no limit.
	MoveLimit int
	// timeout is the request deadline (PERSONNEL_DB_TIMEOUT): retries of
	// a transaction the database aborted go on for most of it.
	timeout time.Duration

	// path is the SQLite file, which names its process-wide locks.
	path string
	// group runs InTx on SQLite, committing concurrent writes together;
	// nil on MySQL and PostgreSQL, whose writers each have a connection.
	group *groupCommitter
	// trust remembers which derived structures may answer requests.
	trust trustCache

	tablesMu     sync.Mutex
	tables       []*Table
	extraKeepers []func(t *Table) Keeper
	// stopMaintenance ends the heartbeat Start began; nil before Start.
	stopMaintenance func()
	// killer is MySQL's pool for killing statements whose request ended.
	killer *stdsql.DB
	// prepared is MySQL's statement cache; nil without it.
	prepared *stmtCache
	// pipelined says a write's keeper statements are held and sent
	// together (pipeline.go); MySQL and PostgreSQL only.
	pipelined bool
	// feed wakes the readers of change feeds who wait for a change.
	feed feedWatch
	// feedPruning is where pruning the feed has got to.
	feedPruning feedPruning
	// closed is set by Close.
	closed atomic.Bool
}

// Open connects to the database cfg names and checks that it answers. For
// SQLite it creates the file (and its directory) when missing.
//
// SQLite gets two pools over one file: a single writer connection whose
// transactions begin IMMEDIATE, so concurrent writers queue in Go rather
// than failing with SQLITE_BUSY, and several read-only readers, which WAL
// lets run beside the writer. MySQL and PostgreSQL get one pool for both.
func Open(ctx context.Context, cfg *config.Config) (*DB, error) {
	var d *DB
	var err error
	switch cfg.DBDriver {
	case config.DriverSQLite:
		d, err = openSQLite(ctx, cfg.DBDSN, cfg.DBMaxOpenConns, !cfg.Without.GroupCommit)
	case config.DriverMySQL:
		d, err = openMySQL(ctx, cfg.DBDSN, cfg.DBFlavor, cfg.DBMaxOpenConns, !cfg.Without.MySQLPrepared, !cfg.Without.WritePipeline)
	case config.DriverPostgres:
		d, err = openPostgres(ctx, cfg.DBDSN, cfg.DBMaxOpenConns, cfg.DBTimeout, !cfg.Without.WritePipeline)
	default:
		return nil, fmt.Errorf("PERSONNEL_DB_DRIVER: unknown driver %q", cfg.DBDriver)
	}
	if err != nil {
		return nil, err
	}
	d.MoveLimit, d.timeout = cfg.MoveLimit, cfg.DBTimeout
	return d, nil
}

// sqlitePragmas apply to every SQLite connection: enforce foreign keys,
// wait for locks instead of failing at once, WAL so readers never block the
// writer, and FULL synchronous so an acknowledged write survives a crash.
const sqlitePragmas = "_foreign_keys=1&_busy_timeout=10000&_journal_mode=WAL&_synchronous=FULL"

// readerPragmas make reader connections read-only and give each a 1 MiB
// page cache instead of SQLite's 2 MiB: the readers share the operating
// system's file cache, so a smaller private cache each costs little speed
// and keeps the service's peak memory within its target (BENCHMARKS.md
// has the peak RSS under load).
const readerPragmas = "&_query_only=1&_pragma=cache_size(-1024)"

// openSQLite opens the database file at path with a pool of readers and
// one writer, through which writes are batched when group is true and
// each run as a transaction of its own otherwise.
func openSQLite(ctx context.Context, path string, readers int, group bool) (*DB, error) {
	name, sep := path, "?"
	if strings.HasPrefix(path, "file:") {
		if strings.Contains(path, "?") {
			sep = "&"
		}
	} else {
		if strings.ContainsAny(path, "?#") {
			return nil, errors.New("PERSONNEL_DB_DSN: a SQLite path must not contain '?' or '#' (use a file: URI for options)")
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("PERSONNEL_DB_DSN: creating the database directory: %w", err)
			}
		}
		// The database holds password hashes: create it private. SQLite
		// gives its -wal and -shm files the database file's mode.
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("PERSONNEL_DB_DSN: creating the database file: %w", err)
		}
	}
	if readers <= 0 {
		readers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	// temp_store MEMORY keeps SQLite's statement and savepoint journals
	// (copies of the pages a statement or a batched write changes, to undo
	// it) in memory: in a file, past a few pages, they were most of what a
	// create wrote. Large writes run alone, with no savepoint (Alone).
	writeDB, err := stdsql.Open("sqlite", name+sep+sqlitePragmas+"&_txlock=immediate&_pragma=temp_store(2)")
	if err != nil {
		return nil, err
	}
	writeDB.SetMaxOpenConns(1)
	writeDB.SetMaxIdleConns(1)
	writeDB.SetConnMaxLifetime(0)
	// The writer connects first, so WAL is in place before any reader.
	var version string
	if err := writeDB.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		writeDB.Close()
		return nil, fmt.Errorf("PERSONNEL_DB_DSN: opening SQLite database %q: %w", path, err)
	}
	readDB, err := stdsql.Open("sqlite", name+sep+sqlitePragmas+readerPragmas)
	if err != nil {
		writeDB.Close()
		return nil, err
	}
	readDB.SetMaxOpenConns(readers)
	readDB.SetMaxIdleConns(readers)
	readDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := readDB.PingContext(ctx); err != nil {
		writeDB.Close()
		readDB.Close()
		return nil, fmt.Errorf("PERSONNEL_DB_DSN: opening SQLite database %q: %w", path, err)
	}
	writeDrv := newStmtDriver(dialect.SQLite, writeDB)
	d := &DB{
		Dialect: dialect.SQLite,
		Flavor:  "sqlite",
		Version: version,
		server:  "sqlite",
		read:    ent.NewClient(ent.Driver(newStmtDriver(dialect.SQLite, readDB))),
		write:   ent.NewClient(ent.Driver(writeDrv)),
		readDB:  readDB,
		writeDB: writeDB,
		path:    path,
	}
	if group {
		d.group = newGroupCommitter(writeDrv)
	}
	return d, nil
}

// openMySQL opens one pool over the MySQL server dsn names. With prepared,
// the queries run outside a transaction (every read) go through the
// statement cache (stmts.go, mysqlStmtCache): each text run more than once
// is prepared once per connection and then runs with the binary protocol,
// with no parsing of the text per request. Statements in a transaction,
// writes outside one, and the texts the cache does not keep have their
// arguments interpolated by the driver, which saves the prepare and close
// round trips a one-off statement would cost.
//
// With pipelined, a connection may run several statements in one text
// (the driver's multiStatements), which a write's pipeTx sends: every
// statement's text is the store's own, and every value in it an argument
// the driver escapes, so no text a client sent can end one statement and
// begin another.
func openMySQL(ctx context.Context, dsn, forceFlavor string, conns int, prepared, pipelined bool) (*DB, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("PERSONNEL_DB_DSN: not a valid MySQL DSN: %w", err)
	}
	// Timestamps are UTC; parameters are interpolated client-side (safe
	// with utf8mb4), which saves a prepare round trip on every query.
	mc.ParseTime = true
	mc.Loc = time.UTC
	mc.InterpolateParams = true
	mc.MultiStatements = mc.MultiStatements || pipelined
	if mc.Timeout == 0 {
		mc.Timeout = 5 * time.Second
	}
	version, maxPrepared, err := serverVersion(ctx, mc)
	if err != nil {
		return nil, fmt.Errorf("connecting to MySQL at %s: %w", mc.Addr, err)
	}
	server := mysqlFlavor(version)
	isolation := "transaction_isolation"
	if server == config.FlavorMariaDB {
		isolation = "tx_isolation" // the only name before MariaDB 11.1
	}
	flavor := server
	if forceFlavor != "" && forceFlavor != config.FlavorAuto {
		flavor = forceFlavor
	}
	// Every connection runs at READ COMMITTED (no gap locks, so concurrent
	// inserts do not deadlock on the unique index; each check that needs a
	// stable view takes row locks). Setting it once per connection saves
	// the round trip that setting it per transaction would cost.
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	if _, set := mc.Params[isolation]; !set {
		mc.Params[isolation] = "'READ-COMMITTED'"
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("PERSONNEL_DB_DSN: %w", err)
	}
	killing := newKillConnector(connector, server)
	sqlDB := stdsql.OpenDB(killing)
	if conns <= 0 {
		conns = 16
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	// Recycle connections so a failover or DNS change is picked up.
	sqlDB.SetConnMaxLifetime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		killing.killer.Close()
		return nil, fmt.Errorf("connecting to MySQL at %s: %w", mc.Addr, err)
	}
	var drv dialect.Driver = entsql.OpenDB(dialect.MySQL, sqlDB)
	var cache *stmtCache
	if prepared {
		cache = mysqlStmtCache(sqlDB, conns, maxPrepared)
		drv = newCacheDriver(dialect.MySQL, cache)
	}
	client := ent.NewClient(ent.Driver(drv))
	return &DB{
		Dialect:   dialect.MySQL,
		Flavor:    flavor,
		Version:   version,
		server:    server,
		read:      client,
		write:     client,
		readDB:    sqlDB,
		writeDB:   sqlDB,
		killer:    killing.killer,
		prepared:  cache,
		pipelined: pipelined,
	}, nil
}

// mysqlFlavor tells the MySQL-compatible server from its version string:
// MariaDB says "10.11.6-MariaDB-...", TiDB "8.0.11-TiDB-v8.5.0".
func mysqlFlavor(version string) string {
	v := strings.ToLower(version)
	switch {
	case strings.Contains(v, "mariadb"):
		return config.FlavorMariaDB
	case strings.Contains(v, "tidb"):
		return config.FlavorTiDB
	}
	return config.FlavorMySQL
}

// serverVersion asks the server for its version, and for how many
// prepared statements it allows in all (max_prepared_stmt_count), on a
// connection of its own: what to set on every connection depends on the
// answers.
func serverVersion(ctx context.Context, mc *mysql.Config) (version string, maxPrepared int, err error) {
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return "", 0, err
	}
	probe := stdsql.OpenDB(connector)
	defer probe.Close()
	if err := probe.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", 0, err
	}
	// A server without the variable is given none to prepare.
	if probe.QueryRowContext(ctx, "SELECT @@max_prepared_stmt_count").Scan(&maxPrepared) != nil {
		maxPrepared = 0
	}
	return version, maxPrepared, nil
}

// Read returns the client for queries outside a transaction.
func (d *DB) Read() *ent.Client { return d.read }

// Write returns the client for writes outside InTx (bulk loads, migrations).
func (d *DB) Write() *ent.Client { return d.write }

// MySQL reports whether the database is MySQL-compatible (MySQL, MariaDB
// or TiDB), for what only their protocol does (LastInsertId, affected rows
// counting changed rows rather than matched ones).
func (d *DB) MySQL() bool { return d.Dialect == dialect.MySQL }

// MariaDB reports whether the service behaves as on MariaDB (detected, or
// forced by PERSONNEL_DB_FLAVOR), for plans measured on its optimizer only.
func (d *DB) MariaDB() bool { return d.Dialect == dialect.MySQL && d.Flavor == config.FlavorMariaDB }

// SQLite reports whether the database is the embedded SQLite: one process
// writes it, through one connection, so its counts need one slot each.
func (d *DB) SQLite() bool { return d.Dialect == dialect.SQLite }

// Postgres reports whether the database is PostgreSQL, which returns new
// ids only through RETURNING and aborts a transaction at its first error.
func (d *DB) Postgres() bool { return d.Dialect == dialect.Postgres }

// Locks are the clauses that make a SELECT lock the rows it reads until the
// transaction ends, as the database spells them. Both are empty on SQLite,
// whose writers are serialised and need no row locks.
type Locks struct {
	// Share keeps others from changing or deleting the rows while letting
	// them read and share-lock them too.
	Share string
	// Update keeps others from changing, deleting or locking the rows.
	Update string
}

// Locks returns the row lock clauses of the database. TiDB has no shared
// row locks (LOCK IN SHARE MODE and FOR SHARE fail there, or lock nothing
// with tidb_enable_noop_functions), so on it Share is an exclusive lock:
// every race a share lock holds is still held, with less concurrency.
func (d *DB) Locks() Locks {
	switch {
	case d.Dialect == dialect.Postgres:
		return Locks{Share: " FOR SHARE", Update: " FOR UPDATE"}
	case d.Dialect == dialect.MySQL && d.Flavor == config.FlavorTiDB:
		return Locks{Share: " FOR UPDATE", Update: " FOR UPDATE"}
	case d.Dialect == dialect.MySQL:
		// LOCK IN SHARE MODE is the spelling MySQL 8 and MariaDB both accept.
		return Locks{Share: " LOCK IN SHARE MODE", Update: " FOR UPDATE"}
	}
	return Locks{}
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.readDB.PingContext(ctx); err != nil {
		return err
	}
	if d.writeDB != d.readDB {
		return d.writeDB.PingContext(ctx)
	}
	return nil
}

// Pools returns the connection pools by name, for their statistics:
// "read" and "write" on SQLite, "mysql" or "postgres" for the single pool
// of a database server.
func (d *DB) Pools() map[string]*stdsql.DB {
	if d.readDB == d.writeDB {
		return map[string]*stdsql.DB{d.Dialect: d.readDB}
	}
	return map[string]*stdsql.DB{"read": d.readDB, "write": d.writeDB}
}

// Close closes every connection, after the batch of writes being committed,
// if any; writes still waiting fail.
func (d *DB) Close() error {
	d.closed.Store(true)
	if d.stopMaintenance != nil {
		d.stopMaintenance()
		d.stopMaintenance = nil
	}
	if d.group != nil {
		d.group.close()
	}
	err := d.read.Close()
	if d.write != d.read {
		err = errors.Join(err, d.write.Close())
	}
	if d.killer != nil {
		err = errors.Join(err, d.killer.Close())
	}
	return err
}
