package resource

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"personnel/apierror"
	"personnel/record"
)

// A list (or descendants) of a hierarchical resource may ask for each
// record's number of children with children_count=true: every record of
// the page then carries "children_count": n. A tree drawn one level at a
// time (the admin UI's) needs it to show which nodes open and how many
// they hold, without loading the level below. It is opt-in, so clients
// written for the DRF service see exactly the records they always have;
// a resource field may not be named children_count (config reserves it).

// ChildrenCountParam is the list parameter that asks for the counts, and
// the key each record carries them under.
const ChildrenCountParam = "children_count"

// parseChildrenCount reads children_count: true/false/1/0 in any letter
// case, as the isnull filters read theirs; absent or empty is false. A
// flat resource has no such parameter, and ignores it as any unknown one.
func (r *Resource) parseChildrenCount(values url.Values) (bool, error) {
	v, ok := last(values, ChildrenCountParam)
	if !ok || v == "" || !r.fields.Hierarchical() {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, apierror.Fields(apierror.FieldError{Field: ChildrenCountParam, Msg: `Enter "true" or "false".`})
}

// ChildrenCounts returns how many records name each of rows as parent
// (records with none are absent from the map), in one statement over the
// parent column's index.
func (r *Resource) ChildrenCounts(ctx context.Context, rows []record.Row) (map[int]int, error) {
	counts := make(map[int]int, len(rows))
	if len(rows) == 0 {
		return counts, nil
	}
	parent := r.fields.List[r.fields.Parent].Column
	s := r.newSQL().Raw("SELECT ").Ident(parent).Raw(", COUNT(*) FROM ").Ident(r.desc.Table).
		Raw(" WHERE ").Ident(parent)
	if r.db.Postgres() {
		ids := make([]int64, len(rows))
		for i, row := range rows {
			ids[i] = int64(row.ID)
		}
		s.Raw(" = ANY(").Arg(ids).Raw("::bigint[])")
	} else {
		// The list is padded to a power of two by repeating the last id:
		// each length is one more text for the statement cache, and pages
		// come in every length.
		n := 1
		for n < len(rows) {
			n *= 2
		}
		s.Raw(" IN (").List(n, func(i int) { s.Arg(rows[min(i, len(rows)-1)].ID) }).Raw(")")
	}
	s.Raw(" GROUP BY ").Ident(parent)
	rs, err := r.db.Read().QueryContext(ctx, s.String(), s.Args...)
	if err != nil {
		return nil, r.storeError(err)
	}
	defer rs.Close()
	for rs.Next() {
		var id, n int
		if err := rs.Scan(&id, &n); err != nil {
			return nil, r.storeError(err)
		}
		counts[id] = n
	}
	if err := rs.Err(); err != nil {
		return nil, r.storeError(err)
	}
	return counts, nil
}

// appendCount renders a record's count before its closing brace.
func appendCount(b []byte, n int) []byte {
	b = append(b, `,"`+ChildrenCountParam+`":`...)
	return strconv.AppendInt(b, int64(n), 10)
}
