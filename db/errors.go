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
)

// IsUniqueViolation reports whether err is a duplicate key.
func IsUniqueViolation(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
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
	n := mysqlNumber(err)
	return n == mysqlRowIsReferenced || n == mysqlNoReferencedRow
}

// IsRetryable reports whether err aborted a transaction that may succeed if
// run again: a deadlock or a lock wait that timed out.
func IsRetryable(err error) bool {
	if code, ok := sqliteCode(err); ok {
		return code&0xff == sqlite3.SQLITE_BUSY
	}
	n := mysqlNumber(err)
	return n == mysqlDeadlock || n == mysqlLockWaitTimeout
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
	if code, ok := sqliteCode(err); ok {
		return code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED
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

func mysqlNumber(err error) uint16 {
	var e *mysql.MySQLError
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}
