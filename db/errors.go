package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MySQL server error numbers this package interprets.
const (
	mysqlDuplicateKey    = 1062
	mysqlRowIsReferenced = 1451 // delete of a parent row
	mysqlNoReferencedRow = 1452 // insert or update of a child row
	mysqlLockWaitTimeout = 1205
	mysqlDeadlock        = 1213
	mysqlServerShutdown  = 1053
	mysqlNoSuchTable     = 1146
	// TiDB's transaction errors that running the transaction again may
	// cure: a write conflict and a commit conflict (met by optimistic
	// transactions; its pessimistic default meets deadlocks instead), a
	// KV error it calls safe to retry, and a schema changed by DDL while
	// the transaction ran.
	tidbWriteConflict     = 9007
	tidbCommitConflict    = 8002
	tidbRetryable         = 8022
	tidbInfoSchemaChanged = 8028
)

// tidbRetryableMessages are the messages of TiDB's retryable errors that
// come without a code of their own (as 1105, "unknown error"): a statement
// that lost its pessimistic lock to others more times than TiDB retries
// it (pessimistic-txn.max-retry-count, 256).
var tidbRetryableMessages = []string{"pessimistic lock retry limit reached"}

// PostgreSQL SQLSTATE codes this package interprets.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgSerializationFailure = "40001"
	pgDeadlock             = "40P01"
	pgLockNotAvailable     = "55P03" // lock_timeout expired, or NOWAIT
	pgAdminShutdown        = "57P01"
	pgCrashShutdown        = "57P02"
	pgCannotConnectNow     = "57P03" // starting up or in recovery
	pgTooManyConnections   = "53300"
	pgUndefinedTable       = "42P01"
)

// IsUniqueViolation reports whether err is a duplicate key.
func IsUniqueViolation(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	if state, ok := pgState(err); ok {
		return state == pgUniqueViolation
	}
	return mysqlNumber(err) == mysqlDuplicateKey
}

// IsForeignKeyViolation reports whether err is a foreign key refusing a
// write: a child naming a missing parent, or the delete of a parent.
func IsForeignKeyViolation(err error) bool {
	if code, ok := sqliteCode(err); ok {
		// SQLite reports an ON DELETE RESTRICT refusal as a trigger
		// constraint; only its message says it is the foreign key.
		return code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY ||
			code == sqlite3.SQLITE_CONSTRAINT_TRIGGER && strings.Contains(err.Error(), "FOREIGN KEY constraint failed")
	}
	if state, ok := pgState(err); ok {
		return state == pgForeignKeyViolation
	}
	n := mysqlNumber(err)
	return n == mysqlRowIsReferenced || n == mysqlNoReferencedRow
}

// IsRetryable reports whether err aborted a transaction that may succeed if
// run again: a deadlock, a lock wait that timed out, or (PostgreSQL, TiDB)
// a serialization failure, a write conflict or another of TiDB's
// retryable errors, recognised by its message where it has no code.
func IsRetryable(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code&0xff == sqlite3.SQLITE_BUSY
	}
	if state, ok := pgState(err); ok {
		return state == pgDeadlock || state == pgSerializationFailure || state == pgLockNotAvailable
	}
	return mysqlRetryable(err)
}

// mysqlRetryable reports whether err is a MySQL, MariaDB or TiDB error
// that aborted a transaction which may succeed if run again.
func mysqlRetryable(err error) bool {
	var e *mysql.MySQLError
	if !errors.As(err, &e) {
		return false
	}
	switch e.Number {
	case mysqlDeadlock, mysqlLockWaitTimeout, tidbWriteConflict, tidbCommitConflict, tidbRetryable, tidbInfoSchemaChanged:
		return true
	}
	for _, m := range tidbRetryableMessages {
		if strings.Contains(e.Message, m) {
			return true
		}
	}
	return false
}

// IsUndefinedTable reports whether err is a statement naming a table the
// database does not have: a database without the schema yet.
func IsUndefinedTable(err error) bool {
	if code, ok := sqliteCode(err); ok {
		// SQLite has no code of its own for it: a generic error says so.
		return code&0xff == sqlite3.SQLITE_ERROR && strings.Contains(err.Error(), "no such table")
	}
	if state, ok := pgState(err); ok {
		return state == pgUndefinedTable
	}
	return mysqlNumber(err) == mysqlNoSuchTable
}

// IsUnavailable reports whether err means the database could not be used
// at all (refused or lost connection, server shutting down, still locked
// after every retry, or the request's database deadline passed), as opposed
// to a problem with the request.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// pgx: a connection that could not be made, timed out or was closed
	// under a statement.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.Timeout(err) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	if code, ok := sqliteCode(err); ok {
		return code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED
	}
	if state, ok := pgState(err); ok {
		switch state {
		case pgAdminShutdown, pgCrashShutdown, pgCannotConnectNow, pgTooManyConnections,
			pgDeadlock, pgSerializationFailure, pgLockNotAvailable:
			return true
		}
		return strings.HasPrefix(state, "08") // connection exception
	}
	// A transaction still aborted after every retry: the database is too
	// busy to serve it now.
	return mysqlNumber(err) == mysqlServerShutdown || mysqlRetryable(err)
}

func sqliteCode(err error) (int, bool) {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code(), true
	}
	return 0, false
}

// pgState returns the SQLSTATE of a PostgreSQL error.
func pgState(err error) (string, bool) {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code, true
	}
	return "", false
}

func mysqlNumber(err error) uint16 {
	var e *mysql.MySQLError
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}
