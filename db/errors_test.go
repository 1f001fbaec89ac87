package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"personnel/db"
	"personnel/db/dbtest"
)

// TiDB's retryable errors, as its server sends them (a code, or only a
// message under 1105, "unknown error"), wrapped as the store sees them.
// After the retries run out they are the database being unavailable (503),
// not a server error.
func TestIsRetryable_TiDBsRetryableTransactionErrors(t *testing.T) {
	for _, e := range []*mysql.MySQLError{
		{Number: 1105, Message: "pessimistic lock retry limit reached"},
		{Number: 9007, Message: "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3, key={tableID=1, handle=2} primary=... [try again later]"},
		{Number: 8002, Message: "[tikv:8002]can not retry select for update statement"},
		{Number: 8022, Message: "Error: KV error safe to retry Txn(Mvcc(WriteConflict)) [try again later]"},
		{Number: 8028, Message: "Information schema is changed during the execution of the statement(for example, table definition may be updated by other DDL ran in parallel)."},
		{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"},
	} {
		err := fmt.Errorf("moving a subtree: %w", e)
		if !db.IsRetryable(err) || !db.IsUnavailable(err) {
			t.Errorf("%d %q: IsRetryable %v, IsUnavailable %v; want both", e.Number, e.Message, db.IsRetryable(err), db.IsUnavailable(err))
		}
	}
	for _, e := range []*mysql.MySQLError{
		{Number: 1105, Message: "some other unknown error"},
		{Number: 1062, Message: "Duplicate entry 'HR' for key 'dept_code'"},
		{Number: 1146, Message: "Table 'personnel.personnel_user' doesn't exist"},
	} {
		if err := fmt.Errorf("x: %w", e); db.IsRetryable(err) || db.IsUnavailable(err) {
			t.Errorf("%d %q is retryable or unavailable", e.Number, e.Message)
		}
	}
}

func TestIsUndefinedTable_ADatabaseWithoutTheSchema(t *testing.T) {
	for _, err := range []error{
		&mysql.MySQLError{Number: 1146, Message: "Table 'personnel.personnel_user' doesn't exist"},
		&pgconn.PgError{Code: "42P01", Message: `relation "personnel_user" does not exist`},
	} {
		if !db.IsUndefinedTable(fmt.Errorf("x: %w", err)) {
			t.Errorf("%v: not an undefined table", err)
		}
	}
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			ctx := context.Background()
			d, err := db.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := d.Read().User.Query().Exist(ctx); !db.IsUndefinedTable(err) {
				t.Fatalf("a query of an empty database: %v; IsUndefinedTable false", err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Read().User.Query().Exist(ctx); err != nil {
				t.Fatalf("after the migration: %v", err)
			}
			if db.IsUndefinedTable(&pgconn.PgError{Code: "23505"}) || db.IsUndefinedTable(&mysql.MySQLError{Number: 1062}) {
				t.Fatal("a duplicate key is an undefined table")
			}
		})
	}
}
