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
	// TiDB's write conflict and commit conflict, met by optimistic
	// transactions (its pessimistic default meets deadlocks instead).
	tidbWriteConflict  = 9007
	tidbCommitConflict = 8002
)

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
// a serialization failure or write conflict.
func IsRetryable(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code&0xff == sqlite3.SQLITE_BUSY
	}
	if state, ok := pgState(err); ok {
		return state == pgDeadlock || state == pgSerializationFailure || state == pgLockNotAvailable
	}
	n := mysqlNumber(err)
	return n == mysqlDeadlock || n == mysqlLockWaitTimeout || n == tidbWriteConflict || n == tidbCommitConflict
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
	n := mysqlNumber(err)
	return n == mysqlServerShutdown || n == mysqlLockWaitTimeout || n == mysqlDeadlock
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
