package record

import (
	"errors"
	"strconv"
	"time"
)

// Scanner reads rows of a resource's table: the id, then the column of
// each stored field in field order (Fields.Selected), as the store and
// the HTTP layer select them. A refs field has no column; its value is
// read from its table of pairs, and is left unset here.
type Scanner struct {
	// Dest are the scan destinations of one row: &id, then one per
	// stored field.
	Dest   []any
	id     int64
	cells  []cell // the destinations after the id
	fields []int  // the field of each destination after the id
	n      int    // fields in all
}

// cell is the scan destination of one stored field: integer cells take
// integers, parent and ref ids and booleans, the others text, choices and
// dates. A scanner's cells are one slice, so that a query's scanner is a
// few allocations however many fields the resource has.
type cell struct {
	v       Value
	integer bool
}

// Scan implements sql.Scanner.
func (n *cell) Scan(src any) error {
	if n.integer {
		return n.scanInt(src)
	}
	return n.scanText(src)
}

// scanText reads text, choices and (on MySQL and PostgreSQL, where they
// arrive as times) dates.
func (n *cell) scanText(src any) error {
	switch s := src.(type) {
	case nil:
		n.v = Value{}
	case string:
		n.v = Value{Str: s, Valid: true}
	case []byte:
		n.v = Value{Str: string(s), Valid: true}
	case time.Time:
		n.v = Value{Str: s.Format(time.DateOnly), Valid: true}
	default:
		return errScan
	}
	return nil
}

// scanInt reads integers, parent and ref ids, and booleans.
func (n *cell) scanInt(src any) error {
	switch s := src.(type) {
	case nil:
		n.v = Value{}
	case int64:
		n.v = Value{Int: s, Valid: true}
	case bool:
		n.v = Value{Valid: true}
		if s {
			n.v.Int = 1
		}
	case []byte: // MySQL text protocol
		i, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return err
		}
		n.v = Value{Int: i, Valid: true}
	default:
		return errScan
	}
	return nil
}

var errScan = errors.New("record: unexpected column type")

// NewScanner returns a scanner for rows of fs; it may be reused.
func NewScanner(fs Fields) *Scanner {
	stored := 0
	for _, f := range fs.List {
		if f.Stored() {
			stored++
		}
	}
	sc := &Scanner{Dest: make([]any, 1, 1+stored), cells: make([]cell, stored), fields: make([]int, 0, stored), n: len(fs.List)}
	sc.Dest[0] = &sc.id
	for i, f := range fs.List {
		if !f.Stored() {
			continue
		}
		c := &sc.cells[len(sc.fields)]
		c.integer = f.Kind == KindInteger || f.Kind == KindParent || f.Kind == KindRef || f.Kind == KindBoolean
		sc.Dest = append(sc.Dest, c)
		sc.fields = append(sc.fields, i)
	}
	return sc
}

// Row returns the row last scanned.
func (sc *Scanner) Row() Row {
	row := Row{ID: int(sc.id), Values: make([]Value, sc.n)}
	for k := range sc.cells {
		row.Values[sc.fields[k]] = sc.cells[k].v
	}
	return row
}

// Selected are the columns a row is read from, after the id: one per
// stored field, in field order (no folded copies).
func (fs Fields) Selected() []string {
	var cols []string
	for _, f := range fs.List {
		if f.Stored() {
			cols = append(cols, f.Column)
		}
	}
	return cols
}
