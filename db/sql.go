package db

import (
	"context"
	stdsql "database/sql"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
)

// Statements the store writes by hand are text, kept in the file of the
// structure they serve: MySQL's spelling, with two marks a renderer turns
// into each database's own:
//
//   - {name} is an identifier from the resource's config (a table or a
//     column), quoted as the database quotes identifiers: `name` or "name".
//     Fixed names (ancestor, depth, gram, ...) are written bare.
//   - ? is a placeholder: $1, $2, ... on PostgreSQL.
//
// Where databases differ in more than that (an upsert, a list of ids),
// the file holds one text per database. Render runs once per statement,
// when a table is registered, never per request.

// Names maps the {name} marks of a statement to identifiers.
type Names map[string]string

// Render writes text for d's database: {name} marks replaced by the
// quoted identifiers names gives, and ? by the database's placeholders.
// A mark without a name is a programming error and panics.
func (d *DB) Render(text string, names Names) string {
	return render(d.Dialect, text, names)
}

func render(dialectName, text string, names Names) string {
	pg := dialectName == dialect.Postgres
	var b strings.Builder
	b.Grow(len(text) + 16)
	params := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '{':
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				panic("db: unterminated {name} in statement: " + text)
			}
			name, ok := names[text[i+1:i+end]]
			if !ok {
				panic("db: no identifier for {" + text[i+1:i+end] + "} in statement: " + text)
			}
			quoteTo(&b, pg, name)
			i += end
		case c == '?' && pg:
			params++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(params))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// quoteTo writes name quoted as an identifier.
func quoteTo(b *strings.Builder, pg bool, name string) {
	q := byte('`')
	if pg {
		q = '"'
	}
	b.WriteByte(q)
	b.WriteString(name)
	b.WriteByte(q)
}

// Quote returns name quoted as an identifier of d's database.
func (d *DB) Quote(name string) string {
	var b strings.Builder
	quoteTo(&b, d.Postgres(), name)
	return b.String()
}

// Marks returns n placeholders separated by ", ", in MySQL's spelling (for
// a statement that Render then numbers).
func Marks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// Tuples returns n groups of width placeholders, "(?, ?), (?, ?)", for a
// multi-row VALUES.
func Tuples(n, width int) string {
	one := "(" + Marks(width) + ")"
	return strings.Repeat(one+", ", n-1) + one
}

// SQL builds a statement piece by piece, for the queries whose shape
// depends on the request (a list's filters and ordering): identifiers
// quoted and placeholders written as the database wants them.
type SQL struct {
	strings.Builder
	Args     []any // the arguments Arg added, in order
	postgres bool
	params   int // placeholders written so far
}

// SQL returns an empty statement for d's database.
func (d *DB) SQL() *SQL { return &SQL{postgres: d.Dialect == dialect.Postgres} }

// Ident writes name quoted as an identifier.
func (s *SQL) Ident(name string) *SQL {
	quoteTo(&s.Builder, s.postgres, name)
	return s
}

// Col writes alias.column, both quoted.
func (s *SQL) Col(alias, column string) *SQL {
	return s.Ident(alias).Raw(".").Ident(column)
}

// Raw writes text as it is.
func (s *SQL) Raw(text string) *SQL {
	s.WriteString(text)
	return s
}

// Param writes a placeholder whose argument is given when the statement
// runs (statements built once and run many times).
func (s *SQL) Param() *SQL {
	s.params++
	if s.postgres {
		s.WriteByte('$')
		s.WriteString(strconv.Itoa(s.params))
	} else {
		s.WriteByte('?')
	}
	return s
}

// Arg writes a placeholder for v and keeps v in Args.
func (s *SQL) Arg(v any) *SQL {
	s.Args = append(s.Args, v)
	return s.Param()
}

// Stmt writes text, a statement built earlier with Param, followed by the
// arguments of its placeholders: what comes after continues its numbering.
func (s *SQL) Stmt(text string, args ...any) *SQL {
	s.WriteString(text)
	s.Args = append(s.Args, args...)
	s.params += len(args)
	return s
}

// List writes n items separated by ", ", each by item.
func (s *SQL) List(n int, item func(i int)) *SQL {
	for i := range n {
		if i > 0 {
			s.WriteString(", ")
		}
		item(i)
	}
	return s
}

// QueryRow runs a one-row query in tx (Reader for reads outside a write)
// and scans the row into dest; no row is sql.ErrNoRows.
func QueryRow(ctx context.Context, tx Tx, query string, args []any, dest ...any) error {
	return scanOne(tx.Query(ctx, query, args...))(dest...)
}

// Reader returns the reading pool as a Tx, for queries outside a write.
func (d *DB) Reader() Tx { return EntTx{d.read} }

// scanOne scans the one row of rows into dest; no row is sql.ErrNoRows.
func scanOne(rows Rows, err error) func(dest ...any) error {
	return func(dest ...any) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return stdsql.ErrNoRows
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		return rows.Close()
	}
}
