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
	fields []int // the field of each destination after the id
	n      int   // fields in all
}

type (
	nullText struct{ v Value }
	nullInt  struct{ v Value }
)

// Scan implements sql.Scanner for text, choices and (on MySQL and
// PostgreSQL, where they arrive as times) dates.
func (n *nullText) Scan(src any) error {
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

// Scan implements sql.Scanner for integers, parent and ref ids, and
// booleans.
func (n *nullInt) Scan(src any) error {
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
	sc := &Scanner{Dest: []any{nil}, n: len(fs.List)}
	sc.Dest[0] = &sc.id
	for i, f := range fs.List {
		switch {
		case !f.Stored():
			continue
		case f.Kind == KindInteger || f.Kind == KindParent || f.Kind == KindRef || f.Kind == KindBoolean:
			sc.Dest = append(sc.Dest, &nullInt{})
		default:
			sc.Dest = append(sc.Dest, &nullText{})
		}
		sc.fields = append(sc.fields, i)
	}
	return sc
}

// Row returns the row last scanned.
func (sc *Scanner) Row() Row {
	row := Row{ID: int(sc.id), Values: make([]Value, sc.n)}
	for k, d := range sc.Dest[1:] {
		switch v := d.(type) {
		case *nullText:
			row.Values[sc.fields[k]] = v.v
		case *nullInt:
			row.Values[sc.fields[k]] = v.v
		}
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
