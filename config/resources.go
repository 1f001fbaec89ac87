package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"

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
}

// ResourceFields are the API names of a resource's three fields.
type ResourceFields struct {
	Code   string `yaml:"code"`
	Name   string `yaml:"name"`
	Parent string `yaml:"parent"`
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
	reservedPaths  = map[string]bool{"openapi": true, "openapi.json": true}
	reservedTables = map[string]bool{"personnel_user": true, "personnel_login_failure": true}
	reservedParams = map[string]bool{"page": true, "page_size": true, "ordering": true, "root": true, "depth": true, "id": true}
)

// ParseResources parses and checks a resources list. source names the file
// in errors, and every error names the entry at fault.
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
	var errs []error
	seen := map[string]map[string]int{"name": {}, "path": {}, "table": {}}
	for i := range doc.Resources {
		r := &doc.Resources[i]
		entry := fmt.Sprintf("%s: resource %d", source, i+1)
		if r.Name != "" {
			entry += fmt.Sprintf(" (%q)", r.Name)
		}
		for _, msg := range r.check() {
			errs = append(errs, fmt.Errorf("%s: %s", entry, msg))
		}
		for kind, v := range map[string]string{"name": r.Name, "path": r.Path, "table": r.Table} {
			if v == "" {
				continue
			}
			if j, dup := seen[kind][v]; dup {
				errs = append(errs, fmt.Errorf("%s: %s %q is already used by resource %d", entry, kind, v, j+1))
			}
			seen[kind][v] = i
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return doc.Resources, nil
}

// check fills in default limits and returns what is wrong with r alone.
func (r *Resource) check() []string {
	var bad []string
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
	fields := []struct{ key, v string }{
		{"fields.code", r.Fields.Code}, {"fields.name", r.Fields.Name}, {"fields.parent", r.Fields.Parent},
	}
	fieldsOK := true
	for _, f := range fields {
		if !need(f.key, f.v, identRE, "a valid identifier (lower-case letters, digits, '_')") {
			fieldsOK = false
		} else if reservedParams[f.v] {
			bad = append(bad, fmt.Sprintf("%s: %q is reserved for a list parameter", f.key, f.v))
			fieldsOK = false
		}
	}
	if fieldsOK {
		// Every column and query parameter derived from the field names
		// must be distinct, or two of them would collide.
		derived := map[string]string{}
		for _, d := range []struct{ name, from string }{
			{r.Fields.Code, "fields.code"}, {r.Fields.Code + "_fold", "fields.code"}, {r.Fields.Code + "_icontains", "fields.code"},
			{r.Fields.Name, "fields.name"}, {r.Fields.Name + "_fold", "fields.name"}, {r.Fields.Name + "_icontains", "fields.name"},
			{r.Fields.Parent, "fields.parent"}, {r.Fields.Parent + "_id", "fields.parent"}, {r.Fields.Parent + "_isnull", "fields.parent"},
		} {
			if other, dup := derived[d.name]; dup && other != d.from {
				bad = append(bad, fmt.Sprintf("%s and %s both give the name %q", other, d.from, d.name))
			}
			derived[d.name] = d.from
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
	return bad
}
