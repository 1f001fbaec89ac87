package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
	"personnel/record"
	"personnel/tabular"
)

// ImportOptions say how an import treats a file.
type ImportOptions struct {
	CreateOnly    bool // mode=create: a row whose code exists is an error, not an update
	DryRun        bool // check and count, write nothing
	DeleteMissing bool // also delete the records whose codes the file lacks
	// Progress, when set, is told how many rows are written, of all.
	Progress func(done, total int)
}

// RowError is what is wrong with one row of a file.
type RowError struct {
	Row    int // as a spreadsheet numbers it (the header is row 1); a JSON array's element from 1
	Fields []apierror.FieldError
}

// ImportResult is what an import did (or, dry, would do).
type ImportResult struct {
	Created, Updated, Unchanged, Deleted int
	Rows                                 []RowError
}

// errDryRun ends a dry run's transaction without committing it.
var errDryRun = errors.New("dry run")

// importRow is one row of a file, decoded.
type importRow struct {
	line     int
	code     string // trimmed
	fold     string
	in       Input
	parent   string // the parent's code; "" for none
	hasPar   bool   // the file gives the parent (a parent column)
	existing *record.Row
	level    int        // 0: its parent is not created by the file; else one more than its parent's
	later    []laterRef // references to records the file creates, set last (importcodes.go)
	changed  bool       // an update of an existing record changed it
	errs     []apierror.FieldError
}

// Import creates and updates r's records from file, all in one
// transaction through the table's write hook, or none when any row is
// wrong: then the result lists every wrong row and the error is nil. An
// error is a failure of the file as a whole (an unknown column, a delete
// refused) or of the store.
func (r *Resource) Import(ctx context.Context, file *tabular.File, opts ImportOptions) (ImportResult, error) {
	rows, rename, err := r.decodeFile(ctx, file)
	if err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	run := func() error {
		return r.db.InTx(db.Alone(ctx), func(tx db.Tx) error {
			res = ImportResult{}
			for i := range rows {
				rows[i].existing, rows[i].level, rows[i].changed = nil, 0, false
			}
			if err := r.importIn(ctx, tx, rows, opts, &res); err != nil {
				return err
			}
			if len(res.Rows) > 0 || opts.DryRun {
				return errDryRun
			}
			return nil
		})
	}
	if empty, eerr := r.isEmpty(ctx); eerr == nil && empty && !opts.DryRun && len(rows) >= bulkImport {
		// A large file into an empty table: loaded as the seed command
		// loads, the table's bulk indexes made once at the end.
		err = r.table.BulkLoad(ctx, run)
	} else {
		err = run()
	}
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if err != nil {
		// A code taken or a parent deleted by a concurrent write.
		return ImportResult{}, r.writeError(err, Input{Given: make([]bool, len(r.fields.List)), Values: make([]record.Value, len(r.fields.List))})
	}
	if res.Rows == nil {
		res.Rows = []RowError{}
	}
	if len(res.Rows) > 0 {
		// Counted only up to the stage that found them: no figure to
		// show for a file that cannot be imported.
		res.Created, res.Updated, res.Unchanged, res.Deleted = 0, 0, 0, 0
	}
	for _, row := range res.Rows {
		for k, e := range row.Fields {
			if c, ok := rename[e.Field]; ok {
				row.Fields[k].Field = c
			}
		}
	}
	return res, nil
}

// bulkImport is the size of file from which an import into an empty
// table goes through the table's bulk load.
const bulkImport = 10000

// isEmpty reports whether r's table holds no record.
func (r *Resource) isEmpty(ctx context.Context) (bool, error) {
	s := r.newSQL()
	s.Raw("SELECT COUNT(*) FROM (SELECT 1 AS one FROM ").Ident(r.desc.Table).Raw(" LIMIT 1) AS t")
	var n int
	err := db.QueryRow(ctx, r.db.Reader(), s.String(), s.Args, &n)
	return n == 0, err
}

// column is what a column of a file holds: a field, the parent's code,
// or nothing the import reads (id).
type column struct {
	field  int // -1: not a field
	parent bool
	byCode bool // a reference by its target's codes (codeColumn)
}

// columns maps a file's header to r's fields, matching names ignoring
// case; a name that is none of r's columns is an error naming it.
func (r *Resource) columns(header []string) ([]column, error) {
	byName := map[string]column{"id": {field: -1}}
	for i, f := range r.fields.List {
		if i == r.fields.Parent {
			byName[strings.ToLower(r.ParentCodeColumn())] = column{field: -1, parent: true}
			continue
		}
		byName[strings.ToLower(f.Key)] = column{field: i}
		if c := r.codeColumn(i); c != "" {
			byName[strings.ToLower(c)] = column{field: i, byCode: true}
		}
	}
	cols := make([]column, len(header))
	var unknown []string
	seen := map[string]bool{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		c, ok := byName[name]
		if !ok {
			unknown = append(unknown, h)
			continue
		}
		if seen[name] {
			return nil, apierror.New(apierror.Invalid, fmt.Sprintf("The column %q is in the file twice.", h))
		}
		seen[name] = true
		cols[i] = c
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, apierror.New(apierror.Invalid, fmt.Sprintf("Unknown columns: %s. The columns of %s are %s.",
			quoteAll(unknown), r.desc.Path, strings.Join(r.FileColumns(), ", ")))
	}
	for _, i := range r.codedRefs() {
		byID, byCode := strings.ToLower(r.fields.List[i].Key), strings.ToLower(r.codeColumn(i))
		if seen[byID] && seen[byCode] {
			return nil, apierror.New(apierror.Invalid, fmt.Sprintf("The columns %q and %q both give %s; keep one.",
				r.fields.List[i].Key, r.codeColumn(i), r.fields.List[i].Key))
		}
	}
	if !seen[strings.ToLower(r.fields.List[r.fields.Code].Key)] {
		return nil, apierror.New(apierror.Invalid, fmt.Sprintf("The file has no %s column, by which its rows are matched to records.", r.fields.List[r.fields.Code].Key))
	}
	return cols, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// cellJSON turns a cell of a CSV or XLSX file into the JSON value the
// API's decoding takes for field f: an empty cell is null (blank for
// text that may not be null, so the message says so), a list of ids is a
// JSON array, a date may be a spreadsheet's serial number, and anything
// else a string, which DRF's decoding of integers and booleans accepts.
func cellJSON(f *record.Field, cell string) json.RawMessage {
	s := strings.TrimSpace(cell)
	if s == "" {
		if f.Kind == record.KindRefs {
			return json.RawMessage("[]")
		}
		if f.Kind == record.KindText && !f.Nullable {
			return json.RawMessage(`""`)
		}
		return json.RawMessage("null")
	}
	switch f.Kind {
	case record.KindRefs:
		parts := strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == ' ' || c == ';' })
		out := []byte{'['}
		for i, p := range parts {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, p)
		}
		return append(out, ']')
	case record.KindDate:
		if d, ok := tabular.DateFromSerial(s); ok && strings.Trim(s, "0123456789.") == "" {
			s = d
		}
	case record.KindText:
		s = cell // decoding trims, and counts what it keeps
	}
	return appendJSONString(nil, s)
}

func appendJSONString(b []byte, s string) []byte {
	data, _ := json.Marshal(s)
	return append(b, data...)
}

// decodeFile turns every row of file into values of r's fields, with the
// errors of each, and says which fields' errors are to be reported under
// the name of another column (a reference given by codes). Errors of the
// file as a whole come back as an error.
func (r *Resource) decodeFile(ctx context.Context, file *tabular.File) ([]importRow, map[string]string, error) {
	cols, err := r.columns(file.Header)
	if err != nil {
		return nil, nil, err
	}
	ids, rename, err := r.readCodeColumns(ctx, file, cols)
	if err != nil {
		return nil, nil, err
	}
	codeKey := r.fields.List[r.fields.Code].Key
	rows := make([]importRow, 0, len(file.Line))
	for k, line := range file.Line {
		m := map[string]json.RawMessage{}
		row := importRow{line: line}
		for i, c := range cols {
			var raw json.RawMessage
			var cell string
			if file.Objects != nil {
				v, ok := file.Objects[k][file.Header[i]]
				if !ok {
					continue
				}
				raw = v
				if s, isString := jsonString(v); isString {
					cell = s
				} else if string(v) != "null" {
					cell = string(v)
				}
			} else {
				if i < len(file.Rows[k]) {
					cell = file.Rows[k][i]
				}
				if c.field >= 0 {
					raw = cellJSON(&r.fields.List[c.field], cell)
				}
			}
			switch {
			case c.parent:
				row.hasPar, row.parent = true, strings.TrimSpace(cell)
			case c.byCode:
				f := &r.fields.List[c.field]
				codes, ok := cellCodes(f.Kind == record.KindRefs, file.Objects != nil, raw, cell)
				if !ok {
					row.errs = append(row.errs, apierror.FieldError{Field: f.Key, Msg: "Invalid value."})
					continue
				}
				refIDs, missing := ids.lookup(c.field, codes)
				switch {
				case missing != "" && f.To == r.desc.Name:
					row.later = append(row.later, laterRef{field: c.field, codes: codes, ids: refIDs})
				case missing != "":
					row.errs = append(row.errs, apierror.FieldError{Field: f.Key, Msg: ids.noSuchCode(c.field, missing)})
				default:
					m[f.Key] = refJSON(f, refIDs)
				}
			case c.field >= 0:
				m[r.fields.List[c.field].Key] = raw
			}
		}
		if raw, ok := m[codeKey]; ok {
			if v, msg := decodeText(&r.fields.List[r.fields.Code], raw); msg == "" {
				row.code, row.fold = v.Str, foldCode(v.Str)
			}
		}
		in, err := r.DecodeInput(m, ModePatch)
		if err != nil {
			row.errs = append(row.errs, apierror.As(err).Fields...)
		}
		row.in = in
		if row.in.Values == nil {
			// Refused: what was given still decides which fields a
			// create lacks.
			row.in = Input{Given: make([]bool, len(r.fields.List)), Values: make([]record.Value, len(r.fields.List))}
			for i := range r.fields.List {
				_, row.in.Given[i] = m[r.fields.List[i].Key]
			}
		}
		rows = append(rows, row)
	}
	r.checkLaterRefs(rows, ids)
	return rows, rename, nil
}

// importIn is the import in tx: look up, check, order, write, delete.
func (r *Resource) importIn(ctx context.Context, tx db.Tx, rows []importRow, opts ImportOptions, res *ImportResult) error {
	codeKey := r.fields.List[r.fields.Code].Key
	parentKey := r.ParentCodeColumn()
	byFold := map[string]int{}
	for i := range rows {
		row := &rows[i]
		if row.fold == "" {
			continue
		}
		if j, dup := byFold[row.fold]; dup {
			row.errs = append(row.errs, apierror.FieldError{Field: codeKey,
				Msg: fmt.Sprintf("%s with this %s is also in row %d of the file.", r.desc.Name, codeKey, rows[j].line)})
			continue
		}
		byFold[row.fold] = i
	}
	// The records the file's codes and parents' codes name.
	var folds []string
	for i := range rows {
		if rows[i].fold != "" {
			folds = append(folds, rows[i].fold)
		}
		if p := rows[i].parent; p != "" {
			if _, inFile := byFold[foldCode(p)]; !inFile {
				folds = append(folds, foldCode(p))
			}
		}
	}
	stored, err := r.byCodes(ctx, tx, folds)
	if err != nil {
		return err
	}
	for i := range rows {
		row := &rows[i]
		if cur, ok := stored[row.fold]; ok && row.fold != "" {
			if opts.CreateOnly {
				row.errs = append(row.errs, apierror.FieldError{Field: codeKey, Msg: r.msgCodeExists})
			}
			row.existing = &cur
		} else if row.fold != "" || len(row.errs) == 0 {
			// A create: every required field must be given.
			for k := range r.fields.List {
				f := &r.fields.List[k]
				if f.Required && !row.in.Given[k] && !hasField(row.errs, f.Key) {
					row.errs = append(row.errs, apierror.FieldError{Field: f.Key, Msg: msgRequired})
				}
			}
		}
		if row.parent != "" {
			pf := foldCode(row.parent)
			_, inFile := byFold[pf]
			_, inStore := stored[pf]
			switch {
			case pf == row.fold:
				row.errs = append(row.errs, apierror.FieldError{Field: parentKey, Msg: "This " + r.desc.Name + " cannot be its own parent."})
			case !inFile && !inStore:
				row.errs = append(row.errs, apierror.FieldError{Field: parentKey,
					Msg: fmt.Sprintf("Object with %s=%s does not exist.", codeKey, row.parent)})
			}
		}
	}
	r.levels(rows, byFold, parentKey)
	if r.collect(rows, res) {
		return nil
	}
	// Written level by level, so that a parent the file creates has its
	// id before the rows below it are written.
	maxLevel := 0
	for i := range rows {
		maxLevel = max(maxLevel, rows[i].level)
	}
	ids := map[string]int{}
	for f, row := range stored {
		ids[f] = row.ID
	}
	for level := 0; level <= maxLevel; level++ {
		var creates []record.Row
		var which []int
		for i := range rows {
			row := &rows[i]
			if row.level != level {
				continue
			}
			if row.existing == nil {
				nr := r.newRow(row.in)
				r.setParent(&nr, row, ids)
				creates = append(creates, nr)
				which = append(which, i)
				continue
			}
			if err := r.importUpdate(ctx, tx, row, ids, res); err != nil {
				return err
			}
		}
		for start := 0; start < len(creates); start += importChunk {
			chunk, chunkRows := creates[start:min(start+importChunk, len(creates))], which[start:min(start+importChunk, len(which))]
			if err := r.importCreates(ctx, tx, rows, chunk, chunkRows, ids, res); err != nil || len(res.Rows) > 0 {
				return err
			}
		}
		if opts.Progress != nil {
			opts.Progress(res.Created+res.Updated+res.Unchanged, len(rows))
		}
	}
	if r.collect(rows, res) {
		return nil
	}
	if err := r.importLaterRefs(ctx, tx, rows, ids, res); err != nil {
		return err
	}
	if r.collect(rows, res) {
		return nil
	}
	if opts.DeleteMissing {
		return r.deleteMissing(ctx, tx, byFold, res)
	}
	return nil
}

// importChunk bounds the records one insert writes (and its keepers
// index): each statement stays well within the database's deadline.
const importChunk = 2000

// importCreates inserts the records of rows which (creates, in order),
// sets their ids, and counts them; a refusal is a row error.
func (r *Resource) importCreates(ctx context.Context, tx db.Tx, rows []importRow, creates []record.Row, which []int, ids map[string]int, res *ImportResult) error {
	err := r.table.Insert(ctx, tx, creates)
	var unknown *db.UnknownRefError
	var deep *db.TooDeepError
	switch {
	case errors.As(err, &unknown):
		for _, m := range unknown.Missing {
			row := &rows[which[m.Row]]
			row.errs = append(row.errs, apierror.FieldError{Field: r.fields.List[m.Field].Key, Msg: msgNoSuchParent(strconv.FormatInt(m.ID, 10))})
		}
		r.collect(rows, res)
		return nil
	case errors.As(err, &deep):
		for k, c := range creates {
			if p := r.fields.Parent; p >= 0 && c.Values[p].Valid && int(c.Values[p].Int) == deep.Parent {
				row := &rows[which[k]]
				row.errs = append(row.errs, apierror.FieldError{Field: r.ParentCodeColumn(), Msg: fmt.Sprintf(
					"This %s cannot be placed under %s: the hierarchy would be more than %d levels deep.", r.desc.Name, row.parent, MaxDepth)})
			}
		}
		r.collect(rows, res)
		return nil
	case err != nil:
		return err
	}
	for k, c := range creates {
		ids[rows[which[k]].fold] = c.ID
	}
	res.Created += len(creates)
	return nil
}

func hasField(errs []apierror.FieldError, key string) bool {
	for _, e := range errs {
		if e.Field == key {
			return true
		}
	}
	return false
}

// collect adds the rows with errors to res, in file order; it reports
// whether there were any.
func (r *Resource) collect(rows []importRow, res *ImportResult) bool {
	res.Rows = res.Rows[:0]
	for i := range rows {
		if len(rows[i].errs) > 0 {
			res.Rows = append(res.Rows, RowError{Row: rows[i].line, Fields: rows[i].errs})
		}
	}
	return len(res.Rows) > 0
}

// levels works out each row's level: how many parents above it the file
// creates or moves. A row whose parents in the file come back to it
// forms a cycle, an error of each of its rows.
func (r *Resource) levels(rows []importRow, byFold map[string]int, parentKey string) {
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]uint8, len(rows))
	var visit func(i int) int
	visit = func(i int) int {
		switch state[i] {
		case done:
			return rows[i].level
		case visiting:
			return -1
		}
		state[i] = visiting
		level := 0
		if p := rows[i].parent; p != "" {
			if j, ok := byFold[foldCode(p)]; ok && j != i {
				pl := visit(j)
				if pl < 0 {
					if !hasField(rows[i].errs, parentKey) {
						rows[i].errs = append(rows[i].errs, apierror.FieldError{Field: parentKey,
							Msg: fmt.Sprintf("The parents of this row in the file form a cycle (through row %d).", rows[j].line)})
					}
					state[i] = done
					rows[i].level = -1
					return -1
				}
				level = pl + 1
				if level >= MaxDepth {
					rows[i].errs = append(rows[i].errs, apierror.FieldError{Field: parentKey, Msg: fmt.Sprintf(
						"This %s cannot be placed under %s: the hierarchy would be more than %d levels deep.", r.desc.Name, p, MaxDepth)})
				}
			}
		}
		state[i] = done
		rows[i].level = level
		return level
	}
	for i := range rows {
		visit(i)
	}
}

// setParent sets the parent of a row to write from its code.
func (r *Resource) setParent(out *record.Row, row *importRow, ids map[string]int) {
	p := r.fields.Parent
	if p < 0 || !row.hasPar {
		return
	}
	if row.parent == "" {
		out.Values[p] = record.Value{}
		return
	}
	out.Values[p] = record.Value{Int: int64(ids[foldCode(row.parent)]), Valid: true}
}

// importUpdate writes a row over the record of its code, when anything
// changes.
func (r *Resource) importUpdate(ctx context.Context, tx db.Tx, row *importRow, ids map[string]int, res *ImportResult) error {
	cur := *row.existing
	out := record.Row{ID: cur.ID, Values: append([]record.Value(nil), cur.Values...)}
	for i := range r.fields.List {
		if row.in.Given[i] {
			out.Values[i] = row.in.Values[i]
		}
	}
	r.setParent(&out, row, ids)
	if p := r.fields.Parent; p >= 0 && out.Values[p].Valid && !out.Values[p].Equal(cur.Values[p]) {
		fe, err := r.checkParent(ctx, tx, cur.ID, int(out.Values[p].Int))
		if err != nil {
			return err
		}
		if fe != nil {
			fe.Field = r.ParentCodeColumn()
			fe.Msg = strings.Replace(fe.Msg, strconv.FormatInt(out.Values[p].Int, 10), row.parent, 1)
			row.errs = append(row.errs, *fe)
			return nil
		}
	}
	changed, err := r.table.Update(ctx, tx, cur, out)
	if err != nil {
		return r.rowUpdateError(row, err)
	}
	row.changed = changed
	if changed {
		res.Updated++
	} else {
		res.Unchanged++
	}
	return nil
}

// rowUpdateError adds to row the error of its update that the row
// explains (a parent too deep, a move too large, a reference to a record
// that does not exist or to the record itself) and returns nil, or
// returns any other error.
func (r *Resource) rowUpdateError(row *importRow, err error) error {
	var unknown *db.UnknownRefError
	var self *db.SelfRefError
	var deep *db.TooDeepError
	var large *db.MoveTooLargeError
	switch {
	case errors.As(err, &deep):
		fe := r.tooDeep(deep.Parent)
		fe.Field = r.ParentCodeColumn()
		row.errs = append(row.errs, fe)
		return nil
	case errors.As(err, &large):
		fe := r.moveTooLarge(large)
		fe.Field = r.ParentCodeColumn()
		row.errs = append(row.errs, fe)
		return nil
	case errors.As(err, &unknown):
		row.errs = append(row.errs, r.unknownRefs(unknown)...)
		return nil
	case errors.As(err, &self):
		if e := r.refError(err); e != nil {
			row.errs = append(row.errs, apierror.As(e).Fields...)
			return nil
		}
	}
	return err
}

// importLaterRefs sets the references that name records the file
// creates (importRow.later), now that every row's record has its id in
// ids: one update of each such record, through the write hook. An update
// of an existing record that changed nothing before, and changes it now,
// counts as updated.
func (r *Resource) importLaterRefs(ctx context.Context, tx db.Tx, rows []importRow, ids map[string]int, res *ImportResult) error {
	var folds []string
	for i := range rows {
		if len(rows[i].later) > 0 {
			folds = append(folds, rows[i].fold)
		}
	}
	if len(folds) == 0 {
		return nil
	}
	// As written, refs lists too: the update's before.
	written, err := r.byCodes(ctx, tx, folds)
	if err != nil {
		return err
	}
	for i := range rows {
		row := &rows[i]
		if len(row.later) == 0 {
			continue
		}
		before, ok := written[row.fold]
		if !ok {
			return fmt.Errorf("import: the record of row %d is not there to set its references", row.line)
		}
		after := record.Row{ID: before.ID, Values: slices.Clone(before.Values)}
		for _, lr := range row.later {
			refIDs := slices.Clone(lr.ids)
			for k, id := range refIDs {
				if id == 0 {
					refIDs[k] = int64(ids[foldCode(lr.codes[k])])
				}
			}
			if r.fields.List[lr.field].Kind == record.KindRefs {
				after.Values[lr.field] = record.Value{IDs: record.SortIDs(refIDs), Valid: true}
			} else {
				after.Values[lr.field] = record.Value{Int: refIDs[0], Valid: true}
			}
		}
		changed, err := r.table.Update(ctx, tx, before, after)
		if err != nil {
			if err := r.rowUpdateError(row, err); err != nil {
				return err
			}
			continue
		}
		if changed && row.existing != nil && !row.changed {
			res.Unchanged--
			res.Updated++
			row.changed = true
		}
	}
	return nil
}

// byCodes reads the records with the folded codes folds, locked for
// update, by folded code.
func (r *Resource) byCodes(ctx context.Context, tx db.Tx, folds []string) (map[string]record.Row, error) {
	out := map[string]record.Row{}
	codeFold := r.fields.List[r.fields.Code].Fold
	for start := 0; start < len(folds); start += 500 {
		batch := folds[start:min(start+500, len(folds))]
		s := r.newSQL()
		r.selectRows(s)
		s.Raw(" WHERE ").Col("r", codeFold).Raw(" IN (")
		s.List(len(batch), func(i int) { s.Arg(batch[i]) })
		s.Raw(")" + r.db.Locks().Update)
		rows, err := r.query(ctx, tx, s.String(), s.Args...)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			out[foldCode(row.Values[r.fields.Code].Str)] = row
		}
	}
	return out, nil
}

// deleteMissing deletes the records whose codes the file lacks, below
// ones first. A record the file keeps that lies below one it deletes
// refuses the whole import.
func (r *Resource) deleteMissing(ctx context.Context, tx db.Tx, inFile map[string]int, res *ImportResult) error {
	s := r.newSQL()
	r.selectRows(s)
	rows, err := r.query(ctx, tx, s.String(), s.Args...)
	if err != nil {
		return err
	}
	gone := map[int]record.Row{}
	for _, row := range rows {
		if _, ok := inFile[foldCode(row.Values[r.fields.Code].Str)]; !ok {
			gone[row.ID] = row
		}
	}
	p := r.fields.Parent
	depth := func(row record.Row) int { return 0 }
	if p >= 0 {
		byID := map[int]record.Row{}
		for _, row := range rows {
			byID[row.ID] = row
		}
		for _, row := range rows {
			if _, deleted := gone[row.ID]; deleted || !row.Values[p].Valid {
				continue
			}
			if parent, ok := gone[int(row.Values[p].Int)]; ok {
				return apierror.New(apierror.Invalid, fmt.Sprintf(
					"delete_missing would delete %s %q, which the file keeps %s %q under; add it to the file, or move or drop what is under it.",
					r.desc.Name, parent.Values[r.fields.Code].Str, r.desc.Name, row.Values[r.fields.Code].Str))
			}
		}
		depth = func(row record.Row) int {
			d := 0
			for row.Values[p].Valid && d < MaxDepth {
				row = byID[int(row.Values[p].Int)]
				d++
			}
			return d
		}
	}
	order := make([]record.Row, 0, len(gone))
	for _, row := range gone {
		order = append(order, row)
	}
	depths := make(map[int]int, len(order))
	for _, row := range order {
		depths[row.ID] = depth(row)
	}
	sort.Slice(order, func(i, j int) bool {
		if depths[order[i].ID] != depths[order[j].ID] {
			return depths[order[i].ID] > depths[order[j].ID]
		}
		return order[i].ID < order[j].ID
	})
	for _, row := range order {
		if err := r.table.Delete(ctx, tx, row); err != nil {
			return err
		}
		res.Deleted++
	}
	return nil
}

// handleImport reads the file of the request, imports it, and answers
// the counts (200), or every wrong row (400).
func (r *Resource) handleImport(c *gin.Context) error {
	values := c.Request.URL.Query()
	if err := r.CheckParams(values, "mode", "dry_run", "delete_missing"); err != nil {
		return err
	}
	var opts ImportOptions
	var errs []apierror.FieldError
	if v, ok := last(values, "mode"); ok && v != "" {
		switch v {
		case "create":
			opts.CreateOnly = true
		case "upsert":
		default:
			errs = append(errs, apierror.FieldError{Field: "mode", Msg: msgInvalidChoice(v)})
		}
	}
	flag := func(name string, dst *bool) {
		if v, ok := last(values, name); ok && v != "" {
			b, valid := boolValue(json.RawMessage(strconv.Quote(v)))
			if !valid {
				errs = append(errs, apierror.FieldError{Field: name, Msg: msgBoolean})
				return
			}
			*dst = b.Int == 1
		}
	}
	flag("dry_run", &opts.DryRun)
	flag("delete_missing", &opts.DeleteMissing)
	if len(errs) > 0 {
		return apierror.Fields(errs...)
	}
	format, data, err := r.readFile(c.Request)
	if err != nil {
		return err
	}
	file, err := tabular.Read(format, data, r.opts.ImportRows)
	if errors.Is(err, tabular.ErrTooManyRows) {
		return apierror.New(apierror.TooLarge, fmt.Sprintf("The file has more than %d rows.", r.opts.ImportRows))
	}
	if err != nil {
		return err
	}
	// The whole import is one transaction, which may take longer than a
	// request's database deadline, and its answer longer than the
	// server's write timeout.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{})
	ctx, cancel := longContext(c.Request.Context(), importTimeout)
	defer cancel()
	res, err := r.Import(ctx, file, opts)
	if err != nil {
		return err
	}
	if len(res.Rows) > 0 && !opts.DryRun {
		what := fmt.Sprintf("%d rows of the file are invalid", len(res.Rows))
		if len(res.Rows) == 1 {
			what = fmt.Sprintf("Row %d of the file is invalid", res.Rows[0].Row)
		}
		return &apierror.Error{Kind: apierror.Invalid, Msg: what + "; nothing was imported.",
			Extra: []byte(`"rows":` + string(AppendRowErrors(nil, res.Rows)))}
	}
	c.Data(http.StatusOK, "application/json", AppendImportResult(nil, res))
	return nil
}

// longContext is the request's context (its values: the actor, the
// request id) without the request's database deadline, bounded by d
// instead, and still canceled when the client goes away.
func longContext(req context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req), d)
	stop := context.AfterFunc(baseOf(req), cancel)
	return ctx, func() { stop(); cancel() }
}

// importTimeout bounds one import's transaction.
const importTimeout = 10 * time.Minute

// readFile returns the format and the bytes of a request's file: its
// body, or its multipart field "file".
func (r *Resource) readFile(req *http.Request) (tabular.Format, []byte, error) {
	ct := req.Header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	var body io.Reader = req.Body
	var name string
	if mt == "multipart/form-data" {
		mr := multipart.NewReader(req.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				return "", nil, apierror.New(apierror.Invalid, `The multipart body has no field "file".`)
			}
			if part.FormName() == "file" {
				body, name, ct = part, part.FileName(), part.Header.Get("Content-Type")
				break
			}
		}
	}
	data, err := io.ReadAll(io.LimitReader(body, r.opts.ImportLimit+1))
	if err != nil {
		return "", nil, apierror.Wrap(apierror.Invalid, "The file could not be read.", err)
	}
	if int64(len(data)) > r.opts.ImportLimit {
		return "", nil, apierror.New(apierror.TooLarge, fmt.Sprintf("The file is larger than %d bytes.", r.opts.ImportLimit))
	}
	f, ok := tabular.FormatOf(ct)
	if !ok || ct == "application/octet-stream" || ct == "" {
		switch {
		case strings.HasSuffix(strings.ToLower(name), ".xlsx"), len(data) > 1 && data[0] == 'P' && data[1] == 'K':
			f, ok = tabular.XLSX, true
		case strings.HasSuffix(strings.ToLower(name), ".json"):
			f, ok = tabular.JSON, true
		case strings.HasSuffix(strings.ToLower(name), ".csv"):
			f, ok = tabular.CSV, true
		}
	}
	if !ok {
		return "", nil, apierror.New(apierror.UnsupportedMediaType, fmt.Sprintf(
			"Unsupported media type %q in request; send text/csv, %s or application/json, or a multipart field \"file\".", ct, tabular.XLSX.ContentType()))
	}
	return f, data, nil
}

// AppendRowErrors appends the rows' errors as JSON: [{"row":7,"errors":{"key":["msg"]}}].
func AppendRowErrors(b []byte, rows []RowError) []byte {
	b = append(b, '[')
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"row":`...)
		b = strconv.AppendInt(b, int64(row.Row), 10)
		b = append(b, `,"errors":`...)
		b = apierror.AppendFieldsObject(b, row.Fields)
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendImportResult appends the answer of an import as JSON.
func AppendImportResult(b []byte, res ImportResult) []byte {
	b = append(b, `{"created":`...)
	b = strconv.AppendInt(b, int64(res.Created), 10)
	b = append(b, `,"updated":`...)
	b = strconv.AppendInt(b, int64(res.Updated), 10)
	b = append(b, `,"unchanged":`...)
	b = strconv.AppendInt(b, int64(res.Unchanged), 10)
	b = append(b, `,"deleted":`...)
	b = strconv.AppendInt(b, int64(res.Deleted), 10)
	b = append(b, `,"rows":`...)
	b = AppendRowErrors(b, res.Rows)
	return append(b, '}')
}
