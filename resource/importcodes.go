package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"personnel/apierror"
	"personnel/record"
	"personnel/tabular"
)

// A file gives a reference by its target's code (department_code) and a
// list of references by codes (area_codes): as a JSON array, or in a
// cell (or a JSON string) separated by ";" as tabular.JoinList writes
// them, a ";" or "\" within a code behind a "\". The import reads every
// code column's codes first, finds their ids with one statement per
// field (per 500 codes), and then decodes each row's ids as the API
// decodes them. A code's record being deleted before the import writes
// is caught by the write hook, as a wrong id in the API is.
//
// A reference to the resource's own records may also name a record that
// no stored record has but the same file creates: its id is known only
// once that row is written. Such a field is left out of its row's write
// (a create takes the field's default, an update keeps what it had) and
// set by an update of the record once every row of the file is written
// (importLaterRefs): in the same transaction, through the same write
// hook, so the audit trail and the change feed end with the final value.
// Such a field is never required (the generator refuses a required
// reference to its own resource). A row that names itself is refused as
// the API refuses it.

// codeIDs are the ids of the codes a file's code columns name, by field
// and folded code, and the target's code key by field for messages.
type codeIDs struct {
	ids  map[int]map[string]int64
	keys map[int]string
}

// laterRef is a reference of a row to its own resource that names a
// code no stored record has: set once the file's rows are written.
type laterRef struct {
	field int
	codes []string
	ids   []int64 // of codes, in order; 0 for a code the file must create
}

// cellCodes are the codes a cell of a code column gives: text (a CSV or
// XLSX cell, or a JSON string) split as tabular.SplitList splits it for
// a list, or a JSON list of strings. ok is false for a JSON value that is
// neither.
func cellCodes(many, isJSON bool, raw json.RawMessage, cell string) (codes []string, ok bool) {
	if isJSON && len(raw) > 0 && raw[0] == '[' && many {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, false
		}
		for _, it := range items {
			s, isString := jsonString(it)
			if !isString {
				return nil, false
			}
			if s = strings.TrimSpace(s); s != "" {
				codes = append(codes, s)
			}
		}
		return codes, true
	}
	if isJSON && len(raw) > 0 && raw[0] != '"' && string(raw) != "null" {
		return nil, false
	}
	if !many {
		if s := strings.TrimSpace(cell); s != "" {
			codes = append(codes, s)
		}
		return codes, true
	}
	for _, s := range tabular.SplitList(cell) {
		if s = strings.TrimSpace(s); s != "" {
			codes = append(codes, s)
		}
	}
	return codes, true
}

// readCodeColumns finds the ids of the codes in file's code columns, and
// says under which column a field's errors are reported.
func (r *Resource) readCodeColumns(ctx context.Context, file *tabular.File, cols []column) (codeIDs, map[string]string, error) {
	out := codeIDs{ids: map[int]map[string]int64{}, keys: map[int]string{}}
	rename := map[string]string{}
	for i, c := range cols {
		if !c.byCode {
			continue
		}
		f := &r.fields.List[c.field]
		rename[f.Key] = r.codeColumn(c.field)
		seen := map[string]bool{}
		var folds []string
		for k := range file.Line {
			var raw json.RawMessage
			var cell string
			if file.Objects != nil {
				raw = file.Objects[k][file.Header[i]]
				cell, _ = jsonString(raw)
			} else if i < len(file.Rows[k]) {
				cell = file.Rows[k][i]
			}
			codes, _ := cellCodes(f.Kind == record.KindRefs, file.Objects != nil, raw, cell)
			for _, code := range codes {
				if fold := foldCode(code); !seen[fold] {
					seen[fold] = true
					folds = append(folds, fold)
				}
			}
		}
		ids, err := r.targetIDs(ctx, c.field, folds)
		if err != nil {
			return codeIDs{}, nil, r.storeError(err)
		}
		out.ids[c.field], out.keys[c.field] = ids, r.targets[c.field].code().Key
	}
	return out, rename, nil
}

// targetIDs finds the ids of the records of field i's target whose codes
// fold to folds.
func (r *Resource) targetIDs(ctx context.Context, i int, folds []string) (map[string]int64, error) {
	t := r.targets[i]
	out := make(map[string]int64, len(folds))
	for start := 0; start < len(folds); start += 500 {
		batch := folds[start:min(start+500, len(folds))]
		s := r.newSQL()
		s.Raw("SELECT ").Ident("id").Raw(", ").Ident(t.code().Column).Raw(" FROM ").Ident(t.res.Table).
			Raw(" WHERE ").Ident(t.code().Fold).Raw(" IN (")
		s.List(len(batch), func(k int) { s.Arg(batch[k]) })
		s.Raw(")")
		rs, err := r.db.Reader().Query(ctx, s.String(), s.Args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var id int64
			var code string
			if err := rs.Scan(&id, &code); err != nil {
				rs.Close()
				return nil, err
			}
			out[foldCode(code)] = id
		}
		if err := rs.Err(); err != nil {
			rs.Close()
			return nil, err
		}
		rs.Close()
	}
	return out, nil
}

// lookup returns the ids of the stored records of field i's target
// whose codes are codes, in order, with 0 for a code no stored record
// has; missing is the first such code ("" when every code has one).
func (c codeIDs) lookup(i int, codes []string) (ids []int64, missing string) {
	ids = make([]int64, len(codes))
	for k, code := range codes {
		id, found := c.ids[i][foldCode(code)]
		if !found && missing == "" {
			missing = code
		}
		ids[k] = id
	}
	return ids, missing
}

// noSuchCode is Django REST Framework's message for a SlugRelatedField
// given code, which no record of field i's target has.
func (c codeIDs) noSuchCode(i int, code string) string {
	return fmt.Sprintf("Object with %s=%s does not exist.", c.keys[i], code)
}

// refJSON is the JSON the API's decoding takes for ids of reference
// field f.
func refJSON(f *record.Field, ids []int64) json.RawMessage {
	if f.Kind == record.KindRefs {
		return appendIDs(nil, ids)
	}
	if len(ids) == 0 {
		return json.RawMessage("null")
	}
	return strconv.AppendInt(nil, ids[0], 10)
}

// checkLaterRefs gives an error to each row with a reference to a code
// that neither a stored record nor a row of the file has, in DRF's words
// as for any unknown code.
func (r *Resource) checkLaterRefs(rows []importRow, ids codeIDs) {
	inFile := map[string]bool{}
	for i := range rows {
		if rows[i].fold != "" {
			inFile[rows[i].fold] = true
		}
	}
	for i := range rows {
		row := &rows[i]
		for _, lr := range row.later {
			for k, id := range lr.ids {
				if code := lr.codes[k]; id == 0 && !inFile[foldCode(code)] {
					row.errs = append(row.errs, apierror.FieldError{Field: r.fields.List[lr.field].Key, Msg: ids.noSuchCode(lr.field, code)})
					break
				}
			}
		}
	}
}
