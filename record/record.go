// Package record describes the records of a resource: its field table,
// worked out once from the resource's config entry (JSON keys, columns and
// their case-folded copies, kinds, rules, filters, how each is searched),
// and the values of one record. The Ent schema, the store and the HTTP
// layer all iterate the same table, so no other package spells out code,
// name, parent or a folded column's name.
package record

import (
	"slices"
	"strconv"

	"personnel/casefold"
	"personnel/config"
)

// Kind is what a field holds, which decides how it is decoded, stored,
// compared and rendered.
type Kind uint8

// The kinds of field.
const (
	KindText    Kind = iota // a string: code, name, string extras
	KindChoice              // a string from a fixed list
	KindInteger             // a 64-bit integer
	KindBoolean             // true or false
	KindDate                // a calendar date, YYYY-MM-DD
	KindParent              // the id of another record of the resource
	KindRef                 // the id of a record of the resource To
	KindRefs                // the ids of records of the resource To, ascending, in IDs
)

// Op is a list filter's comparison.
type Op uint8

// The filter comparisons.
const (
	OpExact     Op = iota // equal (for the parent: records under this id)
	OpIContains           // contains, ignoring case
	OpGTE                 // at least
	OpLTE                 // at most
	OpIsNull              // null (true) or not (false)
	OpIn                  // one of several ids (a reference), in IDs
	OpUnder               // a reference to this id or to a record below it
	// Filters on a reference through the referenced record's code or
	// name (Django's department__dept_code=HR): the value is text, as
	// for the code and name filters.
	OpCodeExact
	OpCodeIContains
	OpNameExact
	OpNameIContains
)

// OpNames are the config and query spellings of the comparisons.
var OpNames = map[string]Op{
	config.FilterExact: OpExact, config.FilterIContains: OpIContains,
	config.FilterGTE: OpGTE, config.FilterLTE: OpLTE, config.FilterIsNull: OpIsNull,
	config.FilterIn: OpIn, config.FilterUnder: OpUnder,
}

// Field is one field of a resource, as every concern sees it: the JSON key
// it is read and written under, its column, its rules and its filters.
type Field struct {
	Key      string   // JSON key, base of its query parameters, and column
	Column   string   // column of the value
	Fold     string   // column of its case-folded copy; "" when there is none
	Kind     Kind     //
	Unique   bool     // no two records share it, ignoring letter case
	Required bool     // a create must give it
	Replaced bool     // PUT must give it too (otherwise PUT keeps it when omitted)
	Nullable bool     // null is a value; for text, blank is allowed too
	MaxLen   int      // text: most characters
	Min, Max *int64   // integer: bounds
	Choices  []string // choice: the values allowed
	Default  Value    // a create that omits it stores this (Valid false: null)
	Filters  []Op     // the filters the list offers on it
	Sortable bool     // the list may be ordered by it
	Indexed  bool     // its searches (icontains) go through a substring index of Fold
	Doc      string   // what it is, for the OpenAPI document
	To       string   // ref and refs: the name of the resource referred to
	OnDelete string   // ref and refs: what deleting a referenced record does (config.OnDelete*)
}

// IsRef reports whether the field refers to records of another resource.
func (f *Field) IsRef() bool { return f.Kind == KindRef || f.Kind == KindRefs }

// Stored reports whether the field has a column in the resource's table
// (all but refs, whose ids are in a table of their own).
func (f *Field) Stored() bool { return f.Kind != KindRefs }

// Has reports whether the field offers filter op.
func (f *Field) Has(op Op) bool {
	for _, o := range f.Filters {
		if o == op {
			return true
		}
	}
	return false
}

// Arg is the argument that stores v in the field's column.
func (f *Field) Arg(v Value) any {
	switch {
	case !v.Valid:
		return nil
	case f.Kind == KindInteger || f.Kind == KindParent || f.Kind == KindRef:
		return v.Int
	case f.Kind == KindBoolean:
		return v.Int == 1
	}
	return v.Str
}

// JSON is v as a JSON value of the field, the way the API renders it:
// nil, an int64, a bool, a string, or (refs) a []int64, never nil.
func (f *Field) JSON(v Value) any {
	switch {
	case f.Kind == KindRefs:
		return append(make([]int64, 0, len(v.IDs)), v.IDs...)
	case !v.Valid:
		return nil
	case f.Kind == KindInteger || f.Kind == KindParent || f.Kind == KindRef:
		return v.Int
	case f.Kind == KindBoolean:
		return v.Int == 1
	}
	return v.Str
}

// FoldArg is the argument that stores the folded copy of v.
func FoldArg(v Value) any {
	if !v.Valid {
		return nil
	}
	return casefold.Fold(v.Str)
}

// Value is the value of one field of one record. Text, choices and dates
// (written YYYY-MM-DD) are in Str; integers, parent and ref ids and
// booleans (1 for true) in Int; the ids of refs in IDs, ascending and
// without repeats (none: the empty list, still Valid).
type Value struct {
	Str   string
	Int   int64
	IDs   []int64
	Valid bool // false: null
}

// Equal reports whether v and w are the same value.
func (v Value) Equal(w Value) bool {
	return v.Valid == w.Valid && v.Int == w.Int && v.Str == w.Str && slices.Equal(v.IDs, w.IDs)
}

// SortIDs sorts ids ascending and drops repeats, as refs values keep them.
func SortIDs(ids []int64) []int64 {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Row is one stored record: its id and a value for each of the resource's
// fields, in the order of its field table.
type Row struct {
	ID     int
	Values []Value
}

// Fields is the field table of a resource, in the order fields are
// rendered (after the id).
type Fields struct {
	List   []Field
	Code   int // index of the unique code
	Name   int // index of the name
	Parent int // index of the parent; -1 for a flat resource
}

// FoldSuffix ends the name of a folded copy's column.
const FoldSuffix = "_fold"

// New builds the field table of a resource from its config entry, which
// config.ParseResources has checked (and filled with defaults).
func New(d config.Resource) Fields {
	fs := Fields{Parent: -1}
	add := func(f Field) int {
		fs.List = append(fs.List, f)
		return len(fs.List) - 1
	}
	both := []Op{OpExact, OpIContains}
	fs.Code = add(Field{Key: d.Fields.Code, Column: d.Fields.Code, Fold: d.Fields.Code + FoldSuffix, Kind: KindText,
		Unique: true, Required: true, Replaced: true, MaxLen: d.Limits.Code, Filters: both, Sortable: true,
		Indexed: d.Search.Code != config.SearchScan,
		Doc:     "Unique within the resource regardless of letter case."})
	fs.Name = add(Field{Key: d.Fields.Name, Column: d.Fields.Name, Fold: d.Fields.Name + FoldSuffix, Kind: KindText,
		Required: true, Replaced: true, MaxLen: d.Limits.Name, Filters: both, Sortable: true,
		Indexed: d.Search.Name != config.SearchScan})
	if d.Hierarchical() {
		fs.Parent = add(Field{Key: d.Fields.Parent, Column: d.Fields.Parent + "_id", Kind: KindParent,
			Nullable: true, Filters: []Op{OpExact, OpIsNull},
			Doc: "The id of the parent " + d.Name + ", or null for a root."})
	}
	for _, e := range d.Extra {
		f := Field{Key: e.Name, Column: e.Name, Required: e.Required, Nullable: !e.Required,
			Min: e.Min, Max: e.Max, Choices: e.Choices, Sortable: e.Ordering, Indexed: e.SubstringIndexed()}
		switch e.Type {
		case config.TypeString:
			f.Kind, f.MaxLen = KindText, e.MaxLength
		case config.TypeChoice:
			f.Kind, f.MaxLen = KindChoice, config.MaxChoiceLength
		case config.TypeInteger:
			f.Kind = KindInteger
		case config.TypeBoolean:
			f.Kind = KindBoolean
		case config.TypeDate:
			f.Kind = KindDate
		case config.TypeRef:
			f.Kind, f.Column, f.To, f.OnDelete = KindRef, config.RefColumn(e), e.To, e.OnDelete
			f.Doc = "The id of a " + e.To + ". " + onDeleteDoc(e.OnDelete, e.To)
		case config.TypeRefs:
			// A list, never null: empty when it names none.
			f.Kind, f.To, f.OnDelete, f.Nullable = KindRefs, e.To, e.OnDelete, false
			f.Default = Value{Valid: true}
			f.Doc = "The ids of " + e.To + " records, ascending. " + onDeleteDoc(e.OnDelete, e.To)
		}
		if e.Folded() {
			f.Fold = e.Name + FoldSuffix
		}
		for _, name := range e.Filters {
			f.Filters = append(f.Filters, OpNames[name])
		}
		if e.Default != nil {
			f.Default = configValue(f.Kind, *e.Default)
		}
		add(f)
	}
	return fs
}

// onDeleteDoc says what a rule does, for the OpenAPI document.
func onDeleteDoc(rule, to string) string {
	switch rule {
	case config.OnDeleteProtect:
		return "A " + to + " cannot be deleted while records refer to it."
	case config.OnDeleteSetNull:
		return "Deleting the " + to + " clears it."
	case config.OnDeleteCascade:
		return "Deleting the " + to + " deletes this record too."
	case config.OnDeleteRemove:
		return "Deleting a " + to + " takes it out of the list."
	}
	return ""
}

// configValue converts a default as written in the config, which the
// config check has validated, to a Value.
func configValue(k Kind, v string) Value {
	switch k {
	case KindInteger:
		n, _ := strconv.ParseInt(v, 10, 64)
		return Value{Int: n, Valid: true}
	case KindBoolean:
		if v == "true" {
			return Value{Int: 1, Valid: true}
		}
		return Value{Valid: true}
	}
	return Value{Str: v, Valid: true}
}

// Hierarchical reports whether records have a parent.
func (fs Fields) Hierarchical() bool { return fs.Parent >= 0 }

// ByKey returns the index of the field with JSON key key, or -1.
func (fs Fields) ByKey(key string) int {
	for i := range fs.List {
		if fs.List[i].Key == key {
			return i
		}
	}
	return -1
}

// Columns are the columns a record is written to, in order: each stored
// field's, with its folded copy after it.
func (fs Fields) Columns() []string {
	var cols []string
	for _, f := range fs.List {
		if !f.Stored() {
			continue
		}
		cols = append(cols, f.Column)
		if f.Fold != "" {
			cols = append(cols, f.Fold)
		}
	}
	return cols
}

// Args returns the arguments that write values (one per field) to
// Columns, in the same order.
func (fs Fields) Args(values []Value) []any {
	args := make([]any, 0, len(values)+4)
	for i := range fs.List {
		f := &fs.List[i]
		if !f.Stored() {
			continue
		}
		args = append(args, f.Arg(values[i]))
		if f.Fold != "" {
			args = append(args, FoldArg(values[i]))
		}
	}
	return args
}

// Defaults returns a value for every field: its default (or null).
func (fs Fields) Defaults() []Value {
	vs := make([]Value, len(fs.List))
	for i := range fs.List {
		vs[i] = fs.List[i].Default
	}
	return vs
}

// Refs returns the indexes of the ref and refs fields, in field order.
func (fs Fields) Refs() []int {
	var out []int
	for i := range fs.List {
		if fs.List[i].IsRef() {
			out = append(out, i)
		}
	}
	return out
}

// Indexed returns the indexes of the fields searched through a substring
// index, in field order.
func (fs Fields) Indexed() []int {
	var out []int
	for i := range fs.List {
		if fs.List[i].Indexed && fs.List[i].Has(OpIContains) {
			out = append(out, i)
		}
	}
	return out
}
