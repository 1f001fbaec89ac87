package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// ResourcesFile is where the resources list lives, relative to the module root.
const ResourcesFile = "config/resources.yaml"

// resourcesYAML is the resources list the binary was built with; the server
// compares it with the resources compiled in.
//
//go:embed resources.yaml
var resourcesYAML []byte

// Limits a resource may set; the upper bounds keep every index within
// InnoDB's 3072-byte key limit (folded columns are three times as wide).
const (
	DefaultCodeLimit = 50
	DefaultNameLimit = 100
	MaxCodeLimit     = 255
	MaxNameLimit     = 190
)

// Resource is one entry of the resources list.
type Resource struct {
	Name   string         `yaml:"name"`  // singular, lower case: "department"
	Path   string         `yaml:"path"`  // URL segment: "departments"
	Table  string         `yaml:"table"` // database table
	Fields ResourceFields `yaml:"fields"`
	Limits ResourceLimits `yaml:"limits"`
	Search ResourceSearch `yaml:"search"` // how code and name are searched
	Extra  []ExtraField   `yaml:"extra"`  // typed fields beyond code, name and parent
}

// How a searched text field (one with an icontains filter) is searched.
const (
	// SearchIndex keeps a substring index beside the table: a search costs
	// what it finds, and every write of the field writes one row per
	// character of its value.
	SearchIndex = "index"
	// SearchScan compares the folded column with LIKE: nothing kept
	// beside the table, and a search reads the records in the list's order
	// until its page is full.
	SearchScan = "scan"
)

// SubstringWarnLength is the max_length above which the generator warns
// that an indexed field's substring index grows large: one row per
// character of every value.
const SubstringWarnLength = 100

// ResourceSearch says how a resource's code and name are searched:
// SearchIndex (the default) or SearchScan.
type ResourceSearch struct {
	Code string `yaml:"code"`
	Name string `yaml:"name"`
}

// ResourceFields are the API names of a resource's code, name and parent
// fields. A resource without a parent is flat: it has no hierarchy.
type ResourceFields struct {
	Code   string `yaml:"code"`
	Name   string `yaml:"name"`
	Parent string `yaml:"parent"`
}

// Hierarchical reports whether the resource's records have a parent.
func (r Resource) Hierarchical() bool { return r.Fields.Parent != "" }

// Types of extra fields.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeDate    = "date"
	TypeChoice  = "choice"
	// TypeRef is one record of another resource (or of the same one):
	// its id, stored in the column <name>_id.
	TypeRef = "ref"
	// TypeRefs is several records of another resource: their ids, stored
	// in a table of pairs beside the resource's own (RefsTable).
	TypeRefs = "refs"
)

// What deleting a referenced record does to the records that refer to it
// (on_delete of a ref or refs field).
const (
	// OnDeleteProtect refuses the delete while any record refers to it
	// (the default of a ref).
	OnDeleteProtect = "protect"
	// OnDeleteSetNull clears the references (an optional ref only).
	OnDeleteSetNull = "set_null"
	// OnDeleteCascade deletes the referring records, whose own rules
	// apply in turn (a ref only).
	OnDeleteCascade = "cascade"
	// OnDeleteRemove takes the deleted id out of each list (the default
	// of refs, as Django's many-to-many fields do; not written in the
	// config).
	OnDeleteRemove = "remove"
)

// Filters an extra field may offer.
const (
	FilterExact     = "exact"
	FilterIContains = "icontains"
	FilterGTE       = "gte"
	FilterLTE       = "lte"
	FilterIsNull    = "isnull"
	// FilterIn selects records whose reference is one of several ids.
	FilterIn = "in"
	// FilterUnder selects records whose reference is a record of a
	// hierarchical resource or any record below it.
	FilterUnder = "under"
)

// Bounds of extra fields. String columns longer than MaxSortableLength
// cannot be in an index together with their folded copy within InnoDB's
// key limit, so only shorter strings may sort; it is also their default
// length.
const (
	DefaultStringLength = 255
	MaxStringLength     = 1000
	MaxSortableLength   = 190
	MaxChoiceLength     = 100
)

// ExtraField is a typed field a resource has beyond code, name and parent.
// Its name is both its JSON key and its column.
type ExtraField struct {
	Name      string   `yaml:"name"`
	Type      string   `yaml:"type"`                 // TypeString, TypeInteger, ...
	MaxLength int      `yaml:"max_length,omitempty"` // strings: most characters
	Min       *int64   `yaml:"min,omitempty"`        // integers: smallest value
	Max       *int64   `yaml:"max,omitempty"`        // integers: largest value
	Choices   []string `yaml:"choices,omitempty"`    // choices: the values allowed
	Default   *string  `yaml:"default,omitempty"`    // the value a create without it gets, as written
	Required  bool     `yaml:"required,omitempty"`   // a create must give it
	Filters   []string `yaml:"filters,omitempty"`    // list filters, from the Filter* names
	Ordering  bool     `yaml:"ordering,omitempty"`   // the list may be ordered by it
	Search    string   `yaml:"search,omitempty"`     // with an icontains filter: SearchScan (default) or SearchIndex
	To        string   `yaml:"to,omitempty"`         // ref and refs: the name of the resource referred to
	OnDelete  string   `yaml:"on_delete,omitempty"`  // ref and refs: an OnDelete* rule; filled in by the check
}

// IsRef reports whether the field refers to records of another resource
// (a ref or refs field).
func (e ExtraField) IsRef() bool { return e.Type == TypeRef || e.Type == TypeRefs }

// Int64 returns a pointer to n, for the Min and Max of generated literals.
func Int64(n int64) *int64 { return &n }

// String returns a pointer to s, for the Default of generated literals.
func String(s string) *string { return &s }

// HasFilter reports whether the field offers filter f.
func (e ExtraField) HasFilter(f string) bool { return slices.Contains(e.Filters, f) }

// Folded reports whether the field keeps a case-folded copy: a string
// that is searched or sorted, which both work on the folded value.
func (e ExtraField) Folded() bool {
	return e.Type == TypeString && (e.HasFilter(FilterIContains) || e.Ordering)
}

// Indexed reports whether the field's column gets an index: it is
// filtered by value or sorted.
func (e ExtraField) Indexed() bool {
	if e.Type == TypeRef {
		return true // the foreign key's look-ups, and every filter on it
	}
	return e.Type != TypeBoolean && e.Type != TypeRefs && (e.HasFilter(FilterExact) || e.HasFilter(FilterGTE) || e.HasFilter(FilterLTE) || e.Ordering)
}

// ResourceLimits are the longest code and name, in characters.
type ResourceLimits struct {
	Code int `yaml:"code"`
	Name int `yaml:"name"`
}

// TypeName is the Ent type of the resource: "cost_centre" gives "CostCentre".
func (r Resource) TypeName() string {
	var b strings.Builder
	for _, part := range strings.Split(r.Name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// Resources returns the resources list embedded in the binary.
func Resources() ([]Resource, error) { return ParseResources(resourcesYAML, ResourcesFile) }

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	pathRE  = regexp.MustCompile(`^[a-z0-9]+([-_][a-z0-9]+)*$`)
	identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// reserved are names the rest of the service already uses: resource names
// that would clash with other Ent types, paths with other routes, field
// names with list parameters.
var (
	reservedNames  = map[string]bool{"user": true, "login_failure": true, "hierarchy": true, "client": true, "tx": true}
	reservedPaths  = map[string]bool{"openapi": true, "openapi.json": true, "docs": true, "whoami": true}
	reservedTables = map[string]bool{"personnel_user": true, "personnel_login_failure": true}
	reservedParams = map[string]bool{"page": true, "page_size": true, "ordering": true, "root": true, "depth": true, "id": true, "expand": true,
		"children_count": true, // a list parameter, and the key it adds to each record
		// Keys of the error body, which a field's messages must not overwrite.
		"code": true, "msg": true, "errors": true, "detail": true, "non_field_errors": true}
)

// ParseResources parses and checks a resources list. source names the file
// in errors, and every error names the line and the entry at fault.
func ParseResources(data []byte, source string) ([]Resource, error) {
	var doc struct {
		Resources []Resource `yaml:"resources"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(doc.Resources) == 0 {
		return nil, fmt.Errorf("%s: no resources listed under \"resources:\"", source)
	}
	lines := entryLines(data)
	var errs []error
	// at names entry i (and extra field j of it, when j >= 0) in a message.
	at := func(i, j int) string {
		line := lines.of(i, j)
		where := source
		if line > 0 {
			where = fmt.Sprintf("%s:%d", source, line)
		}
		entry := fmt.Sprintf("%s: resource %d", where, i+1)
		if r := doc.Resources[i]; r.Name != "" {
			entry += fmt.Sprintf(" (%q)", r.Name)
		}
		return entry
	}
	seen := map[string]map[string]int{"name": {}, "path": {}, "table": {}}
	for i := range doc.Resources {
		r := &doc.Resources[i]
		bad, extra := r.check()
		for k, msg := range bad {
			errs = append(errs, fmt.Errorf("%s: %s", at(i, extra[k]), msg))
		}
		for kind, v := range map[string]string{"name": r.Name, "path": r.Path, "table": r.Table} {
			if v == "" {
				continue
			}
			if j, dup := seen[kind][v]; dup {
				errs = append(errs, fmt.Errorf("%s: %s %q is already used by resource %d", at(i, -1), kind, v, j+1))
			}
			seen[kind][v] = i
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, p := range checkReferences(doc.Resources) {
		errs = append(errs, fmt.Errorf("%s: %s", at(p.resource, p.extra), p.msg))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return doc.Resources, nil
}

// yamlLines are the lines where each entry of the resources list, and each
// of its extra fields, begins.
type yamlLines struct {
	entries []int
	extras  [][]int
}

func (l yamlLines) of(i, j int) int {
	switch {
	case i >= len(l.entries):
		return 0
	case j < 0 || j >= len(l.extras[i]):
		return l.entries[i]
	}
	return l.extras[i][j]
}

// entryLines finds the lines of the entries in data, which has been
// decoded already.
func entryLines(data []byte) yamlLines {
	var root yaml.Node
	var l yamlLines
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return l
	}
	list := mappingValue(root.Content[0], "resources")
	if list == nil {
		return l
	}
	for _, entry := range list.Content {
		l.entries = append(l.entries, entry.Line)
		var extras []int
		if ex := mappingValue(entry, "extra"); ex != nil {
			for _, e := range ex.Content {
				extras = append(extras, e.Line)
			}
		}
		l.extras = append(l.extras, extras)
	}
	return l
}

// mappingValue returns the value of key in the mapping node m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// check fills in defaults and returns what is wrong with r alone, and for
// each message the index of the extra field it is about (-1: the entry).
func (r *Resource) check() (bad []string, extra []int) {
	about := func(j int) {
		for len(extra) < len(bad) {
			extra = append(extra, j)
		}
	}
	need := func(key, v string, re *regexp.Regexp, what string) bool {
		switch {
		case v == "":
			bad = append(bad, key+": missing")
		case !re.MatchString(v):
			bad = append(bad, fmt.Sprintf("%s: %q is not %s", key, v, what))
		case len(v) > 48:
			bad = append(bad, fmt.Sprintf("%s: %q is longer than 48 characters", key, v))
		default:
			return true
		}
		return false
	}
	if need("name", r.Name, nameRE, "lower-case letters and digits separated by single underscores") && reservedNames[r.Name] {
		bad = append(bad, fmt.Sprintf("name: %q is reserved", r.Name))
	}
	if need("path", r.Path, pathRE, "a URL segment of lower-case letters, digits, '-' and '_'") && reservedPaths[r.Path] {
		bad = append(bad, fmt.Sprintf("path: %q is reserved", r.Path))
	}
	if need("table", r.Table, identRE, "a valid identifier (lower-case letters, digits, '_')") && reservedTables[r.Table] {
		bad = append(bad, fmt.Sprintf("table: %q is reserved", r.Table))
	}
	ident := func(key, v string) bool {
		if !need(key, v, identRE, "a valid identifier (lower-case letters, digits, '_')") {
			return false
		}
		if reservedParams[v] {
			bad = append(bad, fmt.Sprintf("%s: %q is reserved", key, v))
			return false
		}
		return true
	}
	namesOK := ident("fields.code", r.Fields.Code)
	namesOK = ident("fields.name", r.Fields.Name) && namesOK
	if r.Fields.Parent != "" {
		namesOK = ident("fields.parent", r.Fields.Parent) && namesOK
	}
	for i := range r.Extra {
		e := &r.Extra[i]
		key := fmt.Sprintf("extra[%d]", i)
		if e.Name != "" {
			key = fmt.Sprintf("extra %q", e.Name)
		}
		about(-1)
		namesOK = ident(key+": name", e.Name) && namesOK
		bad = append(bad, e.check(key)...)
		about(i)
	}
	if namesOK {
		bad = append(bad, r.collisions()...)
	}
	for _, s := range []struct {
		key  string
		mode *string
	}{{"search.code", &r.Search.Code}, {"search.name", &r.Search.Name}} {
		switch *s.mode {
		case "":
			*s.mode = SearchIndex
		case SearchIndex, SearchScan:
		default:
			bad = append(bad, fmt.Sprintf("%s: %q is not %q or %q", s.key, *s.mode, SearchIndex, SearchScan))
		}
	}
	if r.Limits.Code == 0 {
		r.Limits.Code = DefaultCodeLimit
	}
	if r.Limits.Name == 0 {
		r.Limits.Name = DefaultNameLimit
	}
	if r.Limits.Code < 1 || r.Limits.Code > MaxCodeLimit {
		bad = append(bad, fmt.Sprintf("limits.code: %d is outside 1..%d", r.Limits.Code, MaxCodeLimit))
	}
	if r.Limits.Name < 1 || r.Limits.Name > MaxNameLimit {
		bad = append(bad, fmt.Sprintf("limits.name: %d is outside 1..%d", r.Limits.Name, MaxNameLimit))
	}
	about(-1)
	return bad, extra
}

// collisions reports two fields that would give the same column or query
// parameter: every name derived from a field (its folded column, its
// filters in both spellings) must be distinct from every other.
func (r *Resource) collisions() []string {
	var bad []string
	derived := map[string]string{}
	add := func(name, from string) {
		if other, dup := derived[name]; dup && other != from {
			bad = append(bad, fmt.Sprintf("%s and %s both give the name %q", other, from, name))
		}
		derived[name] = from
	}
	lookups := func(base, from string, filters ...string) {
		add(base, from)
		for _, f := range filters {
			if f != FilterExact {
				add(base+"_"+f, from)
			}
			add(base+"__"+f, from)
		}
	}
	add(r.Fields.Code+"_fold", "fields.code")
	lookups(r.Fields.Code, "fields.code", FilterExact, FilterIContains)
	add(r.Fields.Name+"_fold", "fields.name")
	lookups(r.Fields.Name, "fields.name", FilterExact, FilterIContains)
	if r.Fields.Parent != "" {
		add(r.Fields.Parent+"_id", "fields.parent")
		lookups(r.Fields.Parent, "fields.parent", FilterExact, FilterIsNull)
	}
	for _, e := range r.Extra {
		from := fmt.Sprintf("extra %q", e.Name)
		if e.Folded() {
			add(e.Name+"_fold", from)
		}
		if e.Type == TypeRef {
			add(e.Name+"_id", from)
		}
		lookups(e.Name, from, e.Filters...)
	}
	return bad
}

// filtersOf are the filters each type of extra field may offer.
var filtersOf = map[string][]string{
	TypeString:  {FilterExact, FilterIContains, FilterIsNull},
	TypeInteger: {FilterExact, FilterGTE, FilterLTE, FilterIsNull},
	TypeDate:    {FilterExact, FilterGTE, FilterLTE, FilterIsNull},
	TypeBoolean: {FilterExact, FilterIsNull},
	TypeChoice:  {FilterExact, FilterIsNull},
	TypeRef:     {FilterExact, FilterIn, FilterIsNull, FilterUnder},
	TypeRefs:    {FilterExact, FilterIn, FilterIsNull, FilterUnder},
}

// check fills in the default length of a string and returns what is wrong
// with the extra field; key names it in messages.
func (e *ExtraField) check(key string) []string {
	var bad []string
	say := func(format string, args ...any) { bad = append(bad, key+": "+fmt.Sprintf(format, args...)) }
	allowed, ok := filtersOf[e.Type]
	if !ok {
		say("type %q is not one of string, integer, boolean, date, choice, ref, refs", e.Type)
		return bad
	}
	bad = append(bad, e.checkRef(key)...)
	if e.Type == TypeString && e.MaxLength == 0 {
		e.MaxLength = DefaultStringLength
		if e.Ordering {
			e.MaxLength = MaxSortableLength
		}
	}
	switch {
	case e.Type != TypeString && e.MaxLength != 0:
		say("max_length applies to strings only")
	case e.MaxLength < 0 || e.MaxLength > MaxStringLength:
		say("max_length: %d is outside 1..%d", e.MaxLength, MaxStringLength)
	case e.Type == TypeString && e.Ordering && e.MaxLength > MaxSortableLength:
		say("ordering: a string may sort only with a max_length of at most %d (an index key limit)", MaxSortableLength)
	}
	if e.Type != TypeInteger && (e.Min != nil || e.Max != nil) {
		say("min and max apply to integers only")
	}
	if e.Min != nil && e.Max != nil && *e.Min > *e.Max {
		say("min %d is above max %d", *e.Min, *e.Max)
	}
	if e.Type == TypeChoice {
		if len(e.Choices) == 0 {
			say("choices: a choice field needs at least one")
		}
		seen := map[string]bool{}
		for _, c := range e.Choices {
			switch {
			case c == "" || strings.TrimSpace(c) != c:
				say("choices: %q is blank or has surrounding spaces", c)
			case len([]rune(c)) > MaxChoiceLength:
				say("choices: %q is longer than %d characters", c, MaxChoiceLength)
			case seen[c]:
				say("choices: %q is listed twice", c)
			}
			seen[c] = true
		}
	} else if len(e.Choices) > 0 {
		say("choices apply to choice fields only")
	}
	seen := map[string]bool{}
	for _, f := range e.Filters {
		switch {
		case !slices.Contains(allowed, f):
			say("filters: %q is not a filter of a %s (use %s)", f, e.Type, strings.Join(allowed, ", "))
		case f == FilterIsNull && e.Required && e.Type != TypeRef:
			// A required ref is null in records loaded in bulk or stored
			// before it was added, which clients look for.
			say("filters: isnull applies to optional fields only")
		case seen[f]:
			say("filters: %q is listed twice", f)
		}
		seen[f] = true
	}
	if e.Default != nil {
		if msg := e.CheckValue(*e.Default); msg != "" {
			say("default %q: %s", *e.Default, msg)
		}
	}
	switch {
	case e.Search != "" && !e.HasFilter(FilterIContains):
		say("search applies to fields with an icontains filter")
	case e.Search == "" && e.HasFilter(FilterIContains):
		e.Search = SearchScan
	case e.Search != "" && e.Search != SearchIndex && e.Search != SearchScan:
		say("search: %q is not %q or %q", e.Search, SearchIndex, SearchScan)
	}
	return bad
}

// SubstringIndexed reports whether searches of the field go through a
// substring index.
func (e ExtraField) SubstringIndexed() bool { return e.Search == SearchIndex }

// CheckValue returns what is wrong with v, written as in the config file,
// as a value of the field, or "".
func (e ExtraField) CheckValue(v string) string {
	switch e.Type {
	case TypeString:
		if n := len([]rune(v)); n > e.MaxLength {
			return fmt.Sprintf("longer than %d characters", e.MaxLength)
		}
	case TypeInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return "not an integer"
		case e.Min != nil && n < *e.Min:
			return fmt.Sprintf("below min %d", *e.Min)
		case e.Max != nil && n > *e.Max:
			return fmt.Sprintf("above max %d", *e.Max)
		}
	case TypeBoolean:
		if v != "true" && v != "false" {
			return `not "true" or "false"`
		}
	case TypeDate:
		if d, err := time.Parse(time.DateOnly, v); err != nil {
			return "not a date written YYYY-MM-DD"
		} else if d.Year() < 1 {
			// The API refuses year 0 (PostgreSQL has none), so a default must too.
			return "before year 1"
		}
	case TypeChoice:
		if !slices.Contains(e.Choices, v) {
			return "not one of the choices"
		}
	case TypeRef, TypeRefs:
		return "a reference has no default"
	}
	return ""
}
