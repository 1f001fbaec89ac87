package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
	"personnel/jsonbody"
	"personnel/record"
)

// A JSON array POSTed to a collection creates every element or none, as
// Django REST Framework's list serializer (many=True) does: a bad element
// makes a 400 whose "errors" is a list with one object per element, {}
// for a valid one.

// bodyList returns the request's body when it is a JSON array (and puts
// the body back for the object path otherwise).
func (r *Resource) bodyList(req *http.Request) ([]byte, bool) {
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if mt != "application/json" || req.Body == nil {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, r.opts.BodyLimit+1))
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), req.Body))
	if err != nil {
		return nil, false
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return data, len(trimmed) > 0 && trimmed[0] == '['
}

// handleBulkCreate creates the elements of a JSON array.
func (r *Resource) handleBulkCreate(c *gin.Context, data []byte) error {
	if int64(len(data)) > r.opts.BodyLimit {
		return apierror.New(apierror.TooLarge, fmt.Sprintf("Request body is larger than %d bytes.", r.opts.BodyLimit))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return apierror.New(apierror.Invalid, "JSON parse error - the body is not a valid JSON array.")
	}
	if len(items) > r.opts.BulkLimit {
		return apierror.New(apierror.TooLarge, fmt.Sprintf("The list has %d elements; at most %d may be created at once.", len(items), r.opts.BulkLimit))
	}
	ins := make([]Input, len(items))
	errs := make([][]apierror.FieldError, len(items))
	bad := false
	for i, item := range items {
		m, err := jsonbody.Parse(item)
		if err != nil {
			errs[i] = []apierror.FieldError{{Field: apierror.NonFieldErrors,
				Msg: "Invalid data. Expected a dictionary, but got " + pythonType(item) + "."}}
			bad = true
			continue
		}
		in, err := r.DecodeInput(m, ModeCreate)
		if err != nil {
			errs[i] = apierror.As(err).Fields
			bad = true
			continue
		}
		ins[i] = in
	}
	var rows []record.Row
	if !bad {
		var err error
		rows, bad, err = r.BulkCreate(c.Request.Context(), ins, errs)
		if err != nil {
			return err
		}
	}
	if bad {
		b := []byte{'['}
		n := 0
		for i, fe := range errs {
			if i > 0 {
				b = append(b, ',')
			}
			if len(fe) > 0 {
				n++
			}
			b = apierror.AppendFieldsObject(b, fe)
		}
		b = append(b, ']')
		return &apierror.Error{Kind: apierror.Invalid, Errors: b,
			Msg: fmt.Sprintf("%d of the %d elements are invalid; nothing was created.", n, len(items))}
	}
	b := []byte{'['}
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.appendRecord(b, row, nil)
	}
	c.Data(http.StatusCreated, "application/json", append(b, ']'))
	return nil
}

// pythonType names a JSON value's type as Python does, for DRF's message.
func pythonType(raw json.RawMessage) string {
	switch jsonbody.TypeName(raw) {
	case "int":
		return "int"
	case "float":
		return "float"
	case "str":
		return "str"
	case "bool":
		return "bool"
	case "null", "NoneType":
		return "NoneType"
	case "list":
		return "list"
	}
	return jsonbody.TypeName(raw)
}

// BulkCreate inserts a record for each input in one transaction through
// the table's write hook, or none: when an element is refused (a code
// taken, by a record or an earlier element; a parent or reference that
// does not exist) its errors are put in errs and bad is true.
func (r *Resource) BulkCreate(ctx context.Context, ins []Input, errs [][]apierror.FieldError) (rows []record.Row, bad bool, err error) {
	codeKey := r.fields.List[r.fields.Code].Key
	err = r.db.InTx(db.Alone(ctx), func(tx db.Tx) error {
		bad = false
		for i := range errs {
			errs[i] = nil
		}
		rows = make([]record.Row, len(ins))
		folds := make([]string, len(ins))
		first := map[string]int{}
		for i, in := range ins {
			rows[i] = r.newRow(in)
			folds[i] = foldCode(rows[i].Values[r.fields.Code].Str)
			if _, dup := first[folds[i]]; dup {
				errs[i] = append(errs[i], apierror.FieldError{Field: codeKey, Msg: r.msgCodeExists})
				continue
			}
			first[folds[i]] = i
		}
		stored, err := r.byCodes(ctx, tx, folds)
		if err != nil {
			return err
		}
		for i := range rows {
			if _, taken := stored[folds[i]]; taken {
				errs[i] = append(errs[i], apierror.FieldError{Field: codeKey, Msg: r.msgCodeExists})
			}
			if p := r.fields.Parent; p >= 0 && rows[i].Values[p].Valid {
				fe, err := r.checkParent(ctx, tx, 0, int(rows[i].Values[p].Int))
				if err != nil {
					return err
				}
				if fe != nil {
					errs[i] = append(errs[i], *fe)
				}
			}
		}
		for i := range errs {
			bad = bad || len(errs[i]) > 0
		}
		if bad {
			return nil
		}
		err = r.table.Insert(ctx, tx, rows)
		var unknown *db.UnknownRefError
		var deep *db.TooDeepError
		switch {
		case errors.As(err, &unknown):
			for _, m := range unknown.Missing {
				errs[m.Row] = append(errs[m.Row], apierror.FieldError{Field: r.fields.List[m.Field].Key, Msg: msgNoSuchParent(strconv.FormatInt(m.ID, 10))})
			}
			bad = true
			return errDryRun
		case errors.As(err, &deep):
			for i := range rows {
				if p := r.fields.Parent; rows[i].Values[p].Valid && int(rows[i].Values[p].Int) == deep.Parent {
					errs[i] = append(errs[i], r.tooDeep(deep.Parent))
				}
			}
			bad = true
			return errDryRun
		}
		return err
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	if err != nil {
		return nil, false, r.writeError(err, Input{Given: make([]bool, len(r.fields.List))})
	}
	return rows, bad, nil
}
