package resource

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/db"
	"personnel/record"
	"personnel/tabular"
)

// Export and import share one shape of file: the columns id, the code,
// the name, the parent's code (a hierarchical resource's), then each
// extra field by name. A reference is written as the code of the record
// it names, under <name>_code (department_code), and a list of them
// under <name>_codes (area_codes): in CSV and XLSX one cell of codes
// separated by ";" (tabular.JoinList: a ";" or "\" within a code behind
// a "\"), in JSON an array of codes. So a file moves between databases
// whose ids differ, whatever the codes hold; the import also takes the
// ids under the field's own name, as the API does.

// exportBatch is how many records one statement of an export reads: the
// export's memory is about one batch, however many records it writes.
const exportBatch = 1000

// ParentCodeColumn is the column of a file that holds a record's parent
// by its code: the parent's key and "_code" (parent_dept_code).
func (r *Resource) ParentCodeColumn() string {
	if !r.fields.Hierarchical() {
		return ""
	}
	return r.fields.List[r.fields.Parent].Key + "_code"
}

// FileColumns are the columns of r's export and import files.
func (r *Resource) FileColumns() []string {
	cols := []string{"id"}
	for i, f := range r.fields.List {
		if i == r.fields.Parent {
			cols = append(cols, r.ParentCodeColumn())
			continue
		}
		if c := r.codeColumn(i); c != "" {
			cols = append(cols, c)
			continue
		}
		cols = append(cols, f.Key)
	}
	return cols
}

// codeColumn is the column of a file that holds reference field i by
// its target's codes (department_code, area_codes); "" when i is not a
// reference to a resource this service serves.
func (r *Resource) codeColumn(i int) string {
	f := &r.fields.List[i]
	switch {
	case !f.IsRef() || r.targets[i] == nil:
		return ""
	case f.Kind == record.KindRefs:
		return f.Key + "_codes"
	default:
		return f.Key + "_code"
	}
}

// codedRefs are the fields a file holds by codes.
func (r *Resource) codedRefs() []int {
	var out []int
	for _, i := range r.fields.Refs() {
		if r.codeColumn(i) != "" {
			out = append(out, i)
		}
	}
	return out
}

// refCodes are the codes of the records a batch refers to, by field and
// id.
type refCodes map[int]map[int64]string

// read fills c with the codes of the records fields refer to from rows,
// read in tx.
func (c refCodes) read(ctx context.Context, tx db.Tx, r *Resource, fields []int, rows []record.Row) error {
	clear(c)
	for _, i := range fields {
		c[i] = map[int64]string{}
	}
	return r.readTargets(ctx, tx, fields, rows, func(field int, id int64, code, _ string) { c[field][id] = code })
}

// cell is value v of reference field i by its target's codes; a target
// not read (none, in an export's one snapshot) is left out.
func (c refCodes) cell(i int, k record.Kind, v record.Value) tabular.Cell {
	if k == record.KindRef {
		if code, ok := c[i][v.Int]; v.Valid && ok {
			return tabular.Cell{Kind: tabular.Text, Str: code}
		}
		return tabular.Cell{}
	}
	codes := make([]string, 0, len(v.IDs))
	for _, id := range v.IDs {
		if code, ok := c[i][id]; ok {
			codes = append(codes, code)
		}
	}
	return tabular.Cell{Kind: tabular.Strings, Strs: codes}
}

// cells turns a record into the cells of a file row.
func (r *Resource) cells(row record.Row, parentCode *string, codes refCodes, out []tabular.Cell) []tabular.Cell {
	out = append(out[:0], tabular.Cell{Kind: tabular.Int, Int: int64(row.ID)})
	for i := range r.fields.List {
		f := &r.fields.List[i]
		v := row.Values[i]
		var c tabular.Cell
		switch {
		case i == r.fields.Parent:
			if parentCode != nil {
				c = tabular.Cell{Kind: tabular.Text, Str: *parentCode}
			}
		case codes[i] != nil:
			c = codes.cell(i, f.Kind, v)
		case f.Kind == record.KindRefs:
			c = tabular.Cell{Kind: tabular.List, IDs: v.IDs}
		case !v.Valid:
		case f.Kind == record.KindText || f.Kind == record.KindChoice:
			c = tabular.Cell{Kind: tabular.Text, Str: v.Str}
		case f.Kind == record.KindInteger || f.Kind == record.KindRef:
			c = tabular.Cell{Kind: tabular.Int, Int: v.Int}
		case f.Kind == record.KindBoolean:
			c = tabular.Cell{Kind: tabular.Bool, Int: v.Int}
		case f.Kind == record.KindDate:
			c = tabular.Cell{Kind: tabular.Date, Str: v.Str}
		}
		out = append(out, c)
	}
	return out
}

// Export writes every record q's filters select, in q's order, to w,
// and closes it. It reads a batch at a time, each batch after the last
// record of the one before (keyset paging), so memory stays flat however
// many records there are, and every batch in one snapshot (InSnapshot):
// the file holds the records as they were when the export began, each
// once, with its parent's and references' codes as they were then,
// whatever is written while it is made.
func (r *Resource) Export(ctx context.Context, q Query, w tabular.Writer) error {
	if err := w.Header(r.FileColumns()); err != nil {
		return err
	}
	r.planRefs(ctx, q.Filters)
	var cells []tabular.Cell
	coded, codes := r.codedRefs(), refCodes{}
	err := r.db.InSnapshot(ctx, func(tx db.Tx) error {
		return r.eachBatch(ctx, tx, q, func(rows []record.Row, parents []*string) error {
			if len(coded) > 0 {
				if err := codes.read(ctx, tx, r, coded, rows); err != nil {
					return err
				}
			}
			for k, row := range rows {
				cells = r.cells(row, parents[k], codes, cells)
				if err := w.Row(cells); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return r.storeError(err)
	}
	return w.Close()
}

// sortKey is one column a list's order sorts by, as keyset paging
// compares it.
type sortKey struct {
	field int // -1: id
	fold  bool
	desc  bool
}

// sortKeys are the columns orderBy sorts by, in order; ok is false when
// the order goes through another table (a reference by its target's
// name), which keyset paging does not follow.
func (r *Resource) sortKeys(terms []OrderBy) ([]sortKey, bool) {
	var keys []sortKey
	lastDesc := false
	for _, t := range terms {
		lastDesc = t.Desc
		if t.Field < 0 {
			break
		}
		if t.Target {
			return nil, false
		}
		f := &r.fields.List[t.Field]
		if f.Fold != "" {
			keys = append(keys, sortKey{field: t.Field, fold: true, desc: t.Desc})
			if f.Unique {
				break
			}
		}
		keys = append(keys, sortKey{field: t.Field, desc: t.Desc})
	}
	return append(keys, sortKey{field: -1, desc: lastDesc}), true
}

// keyArg is the value of key in row, as an argument.
func (r *Resource) keyArg(k sortKey, row record.Row) any {
	if k.field < 0 {
		return row.ID
	}
	v := row.Values[k.field]
	if k.fold {
		return record.FoldArg(v)
	}
	return r.fields.List[k.field].Arg(v)
}

// after writes the condition of the rows that come after last in the
// order of keys. Every backend sorts nulls first going up and last going
// down (orderBy tells PostgreSQL so).
func (r *Resource) after(s *db.SQL, keys []sortKey, last record.Row) {
	col := func(k sortKey) {
		switch {
		case k.field < 0:
			s.Col("r", "id")
		case k.fold:
			s.Col("r", r.fields.List[k.field].Fold)
		default:
			s.Col("r", r.fields.List[k.field].Column)
		}
	}
	s.Raw("(")
	for i, k := range keys {
		if i > 0 {
			s.Raw(" OR ")
		}
		s.Raw("(")
		for _, e := range keys[:i] {
			col(e)
			if v := r.keyArg(e, last); v == nil {
				s.Raw(" IS NULL")
			} else {
				s.Raw(" = ").Arg(v)
			}
			s.Raw(" AND ")
		}
		v := r.keyArg(k, last)
		switch {
		case v == nil && k.desc:
			s.Raw("1 = 0")
		case v == nil:
			col(k)
			s.Raw(" IS NOT NULL")
		case k.desc:
			s.Raw("(")
			col(k)
			s.Raw(" < ").Arg(v).Raw(" OR ")
			col(k)
			s.Raw(" IS NULL)")
		default:
			col(k)
			s.Raw(" > ").Arg(v)
		}
		s.Raw(")")
	}
	s.Raw(")")
}

// eachBatch calls fn with the records q selects, read in tx, in q's
// order, a batch at a time, with each record's parent's code (nil for a
// root or a flat resource).
func (r *Resource) eachBatch(ctx context.Context, tx db.Tx, q Query, fn func(rows []record.Row, parents []*string) error) error {
	keys, keyset := r.sortKeys(q.Order)
	var last *record.Row
	sc := record.NewScanner(r.fields)
	for offset := 0; ; offset += exportBatch {
		s := r.newSQL()
		s.Raw("SELECT " + r.sql.columns)
		if r.fields.Hierarchical() {
			s.Raw(", ").Col("ep", r.fields.List[r.fields.Code].Column)
		}
		s.Raw(" FROM ").Ident(r.desc.Table).Raw(" AS ").Ident("r")
		if r.fields.Hierarchical() {
			s.Raw(" LEFT JOIN ").Ident(r.desc.Table).Raw(" AS ").Ident("ep").Raw(" ON ").
				Col("ep", "id").Raw(" = ").Col("r", r.fields.List[r.fields.Parent].Column)
		}
		r.whereQuery(s, "r", q, noIndex)
		if keyset && last != nil {
			if len(q.Filters)+len(q.Search) > 0 {
				s.Raw(" AND ")
			} else {
				s.Raw(" WHERE ")
			}
			r.after(s, keys, *last)
		}
		r.orderBy(s, "r", q.Order)
		if keyset {
			s.Raw(" LIMIT ").Arg(exportBatch)
		} else {
			limitOffset(s, exportBatch, offset)
		}
		rows, parents, err := r.readBatch(ctx, tx, s, sc)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := fn(rows, parents); err != nil {
				return err
			}
		}
		if len(rows) < exportBatch {
			return nil
		}
		last = &rows[len(rows)-1]
	}
}

// readBatch runs one statement of eachBatch in tx.
func (r *Resource) readBatch(ctx context.Context, tx db.Tx, s *db.SQL, sc *record.Scanner) ([]record.Row, []*string, error) {
	rs, err := tx.Query(ctx, s.String(), s.Args...)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	dest := sc.Dest
	var parent *string
	if r.fields.Hierarchical() {
		dest = append(dest[:len(dest):len(dest)], &parent)
	}
	rows := make([]record.Row, 0, exportBatch)
	var parents []*string
	for rs.Next() {
		parent = nil
		if err := rs.Scan(dest...); err != nil {
			return nil, nil, err
		}
		rows = append(rows, sc.Row())
		parents = append(parents, parent)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, err
	}
	if err := rs.Close(); err != nil {
		return nil, nil, err
	}
	return rows, parents, r.table.LoadRefs(ctx, tx, rows)
}

// handleExport sends the file of the records the list's parameters
// select.
func (r *Resource) handleExport(c *gin.Context) error {
	values := c.Request.URL.Query()
	q, err := r.ParseQuery(values, "format")
	if err != nil {
		return err
	}
	format := tabular.CSV
	if v, ok := last(values, "format"); ok && v != "" {
		f, known := tabular.ParseFormat(v)
		if !known {
			return apierror.Fields(apierror.FieldError{Field: "format", Msg: fmt.Sprintf("%q is not a valid choice.", v)})
		}
		format = f
	}
	// The file is made first, into a temporary file, and sent after: the
	// export's snapshot (Export) then lasts as long as reading the records
	// takes, not as long as the client takes to download them, so a slow
	// or stalled client holds no database connection and no old row
	// versions; and a failure while the file is made is still an error
	// answer, not a truncated file.
	spool, err := os.CreateTemp("", "personnel-export-*")
	if err != nil {
		return fmt.Errorf("export: a temporary file for the export: %w", err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	buf := bufio.NewWriterSize(spool, 256<<10)
	w, err := tabular.NewWriter(format, buf, r.desc.Path)
	if err != nil {
		return err
	}
	ctx, cancel := longContext(c.Request.Context(), exportTimeout)
	defer cancel()
	if err := r.Export(ctx, q, w); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("export: writing the temporary file: %w", err)
	}
	size, err := spool.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("export: reading the temporary file: %w", err)
	}
	c.Header("Content-Type", format.ContentType())
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.%s"`, r.desc.Path, time.Now().UTC().Format("20060102"), format))
	c.Header("Content-Length", strconv.FormatInt(size, 10))
	c.Status(http.StatusOK)
	// A large file outlasts the server's write timeout; the client going
	// away still ends the copy.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{})
	if _, err := io.Copy(c.Writer, spool); err != nil {
		// Too late for an error answer: the client gets a truncated file
		// (and the connection is cut), the log the cause.
		slog.InfoContext(c.Request.Context(), "export not sent in full", "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// exportTimeout bounds one export.
const exportTimeout = time.Hour

// foldCode is a code as uniqueness compares it.
func foldCode(code string) string { return casefold.Fold(code) }
