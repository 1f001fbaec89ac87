package db_test

import (
	"context"
	"errors"
	"testing"

	"personnel/db"
	"personnel/db/dbtest"
)

// pipeProbe opens b with a table of its own for a test of what a write
// holds, and returns the table's name and its INSERT of (id, note, n).
func pipeProbe(t *testing.T, b dbtest.Backend) (*db.DB, db.Names, string) {
	t.Helper()
	d, _ := b.Open(t)
	names := db.Names{"t": "pipe_probe"}
	text := "CREATE TABLE {t} (id INTEGER PRIMARY KEY, note VARCHAR(200), n BIGINT)"
	if _, err := d.Write().ExecContext(context.Background(), d.Render(text, names)); err != nil {
		t.Fatal(err)
	}
	return d, names, d.Render("INSERT INTO {t} (id, note, n) VALUES (?, ?, ?)", names)
}

// probeInt runs a query of one integer outside any write.
func probeInt(d *db.DB, query string) (int64, error) {
	rows, err := d.Read().QueryContext(context.Background(), query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if !rows.Next() {
		return 0, errors.Join(rows.Err(), errors.New("no row"))
	}
	return n, errors.Join(rows.Scan(&n), rows.Err())
}

// Statements a write hands to execLater run in the order given, with their
// values exactly as given (quotes, backslashes, placeholders' characters
// and statement separators inside values included), before the write's
// next query, which sees what they wrote.
func TestPipeline_HeldStatementsRunInOrderWithTheirValuesBeforeTheNextQuery(t *testing.T) {
	notes := []string{"it's", `back\slash \' \\`, "what? $1 $2 ?", "a'; DROP TABLE pipe_probe; --", "zürich 東京", ""}
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, names, insert := pipeProbe(t, b)
			ctx := context.Background()
			var seen []string
			err := d.InTx(ctx, func(tx db.Tx) error {
				for i, note := range notes {
					if err := db.ExecLater(ctx, tx, insert, i+1, note, -int64(i)<<40); err != nil {
						return err
					}
				}
				// Run after the inserts, or it would change nothing.
				if err := db.ExecLater(ctx, tx, d.Render("UPDATE {t} SET n = n + ? WHERE id = ?", names), 7, 1); err != nil {
					return err
				}
				if err := db.ExecLater(ctx, tx, d.Render("DELETE FROM {t} WHERE id = ?", names), len(notes)); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, d.Render("SELECT note FROM {t} ORDER BY id", names))
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var s string
					if err := rows.Scan(&s); err != nil {
						return err
					}
					seen = append(seen, s)
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			want := notes[:len(notes)-1]
			if len(seen) != len(want) {
				t.Fatalf("the write's query saw %q, want %q", seen, want)
			}
			for i := range want {
				if seen[i] != want[i] {
					t.Errorf("note %d: %q, want %q", i+1, seen[i], want[i])
				}
			}
			if n, err := probeInt(d, d.Render("SELECT n FROM {t} WHERE id = 1", names)); err != nil || n != 7 {
				t.Errorf("record 1's n after the update: %d, %v; want 7", n, err)
			}
			want4 := int64(-(1 + 2 + 3 + 4)) << 40
			if n, err := probeInt(d, d.Render("SELECT SUM(n) FROM {t} WHERE id > 1", names)); err != nil || n != want4 {
				t.Errorf("the others' n: %d, %v; want %d", n, err, want4)
			}
		})
	}
}

// A held statement that fails is the write's error, and nothing the write
// did is kept: not the statements held before it, not the ones that ran.
// On MySQL and PostgreSQL it is held (execLater returns before it runs);
// SQLite runs it at once.
func TestPipeline_AFailingHeldStatementUndoesTheWholeWrite(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, names, insert := pipeProbe(t, b)
			ctx := context.Background()
			var held error
			err := d.InTx(ctx, func(tx db.Tx) error {
				if _, err := tx.ExecContext(ctx, insert, 1, "ran", 0); err != nil {
					return err
				}
				if err := db.ExecLater(ctx, tx, insert, 2, "held", 0); err != nil {
					return err
				}
				held = db.ExecLater(ctx, tx, insert, 2, "the same id again", 0)
				return held
			})
			if b.Networked() && held != nil {
				t.Errorf("the failing statement ran when it was given: %v", held)
			}
			if !db.IsUniqueViolation(err) {
				t.Fatalf("the write's error: %v, want the unique violation", err)
			}
			if n, err := probeInt(d, d.Render("SELECT COUNT(*) FROM {t}", names)); err != nil || n != 0 {
				t.Errorf("%d rows kept (%v), want none", n, err)
			}
		})
	}
}
