package db

import (
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
)

// SQL writes the text of a statement for one database: identifiers quoted
// and placeholders written as that database wants them. It is the one
// quoting helper of every statement Personnel writes by hand, so those
// statements read the same whatever the backend.
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
	q := byte('`')
	if s.postgres {
		q = '"'
	}
	s.WriteByte(q)
	s.WriteString(name)
	s.WriteByte(q)
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
