package config

import (
	"fmt"
	"slices"
	"strings"
)

// References between resources: an extra field of type ref names one
// record of another resource (to:), stored as its id in the column
// <name>_id; one of type refs names several, stored as pairs of ids in a
// table of their own beside the resource's (RefsTable). What deleting a
// referenced record does to the records that refer to it is the field's
// on_delete rule. The checks here are those that need the whole list: the
// target exists, an under filter has a hierarchy to go down, the tables
// and types a refs field adds are free, and no cycle of cascades exists.

// MaxTableName is the longest table name: PostgreSQL cuts identifiers
// at 63 bytes, MySQL refuses them beyond 64.
const MaxTableName = 63

// RefColumn is the column of a ref field: its name and "_id", as a
// parent's.
func RefColumn(e ExtraField) string { return e.Name + "_id" }

// RefsTable is the table of the pairs of a refs field of r: the record's
// id and one referenced id a row.
func (r Resource) RefsTable(e ExtraField) string { return r.Table + "_" + e.Name }

// RefsTypeName is the Ent type of the table of a refs field of r:
// employee's area gives EmployeeArea.
func (r Resource) RefsTypeName(e ExtraField) string {
	return Resource{Name: r.Name + "_" + e.Name}.TypeName()
}

// RefsColumns are the columns of the table of a refs field of r: the
// record's id (<resource>_id) and the referenced id (<field>_id).
func (r Resource) RefsColumns(e ExtraField) (owner, target string) {
	return r.Name + "_id", e.Name + "_id"
}

// SelfRefSymbol is the name Ent gives the foreign key of a ref field of r
// that refers to r itself (one to another resource is named
// <table>_<field>_fk, shortened as need be).
func SelfRefSymbol(r Resource, e ExtraField) string {
	return r.Table + "_" + r.Table + "_x_by_" + e.Name
}

// checkRef fills in the on_delete rule of a ref or refs field and returns
// what is wrong with the field alone; key names it in messages.
func (e *ExtraField) checkRef(key string) []string {
	var bad []string
	say := func(format string, args ...any) { bad = append(bad, key+": "+fmt.Sprintf(format, args...)) }
	if !e.IsRef() {
		if e.To != "" || e.OnDelete != "" {
			say("to and on_delete apply to ref and refs fields only")
		}
		return bad
	}
	switch {
	case e.To == "":
		say("to: missing (the name of the resource referred to)")
	case !nameRE.MatchString(e.To):
		say("to: %q is not the name of a resource", e.To)
	}
	if e.Type == TypeRefs {
		if e.Ordering {
			say("ordering: a list cannot order by a refs field")
		}
		switch e.OnDelete {
		case "", OnDeleteRemove:
			e.OnDelete = OnDeleteRemove
		case OnDeleteProtect:
		default:
			say("on_delete: %q does not apply to refs: a deleted record leaves every list it is in (the default), or with %q cannot be deleted while a list holds it",
				e.OnDelete, OnDeleteProtect)
		}
		return bad
	}
	switch e.OnDelete {
	case "":
		e.OnDelete = OnDeleteProtect
	case OnDeleteProtect, OnDeleteCascade:
	case OnDeleteSetNull:
		if e.Required {
			say("on_delete: set_null would clear a required field; use protect or cascade, or make the field optional")
		}
	default:
		say("on_delete: %q is not %s, %s or %s", e.OnDelete, OnDeleteProtect, OnDeleteSetNull, OnDeleteCascade)
	}
	return bad
}

// refProblem is what is wrong with extra field extra of resource
// resource, found by checkReferences.
type refProblem struct {
	resource, extra int
	msg             string
}

// checkReferences returns what is wrong with the references of rs, each
// entry of which has passed its own checks.
func checkReferences(rs []Resource) []refProblem {
	var bad []refProblem
	byName := map[string]int{}
	var names []string
	tables := map[string]string{}
	types := map[string]string{}
	for i, r := range rs {
		byName[r.Name] = i
		names = append(names, r.Name)
		tables[r.Table] = fmt.Sprintf("resource %q", r.Name)
		types[strings.ToLower(r.TypeName())] = fmt.Sprintf("resource %q", r.Name)
	}
	for i, r := range rs {
		for j, e := range r.Extra {
			if !e.IsRef() {
				continue
			}
			say := func(format string, args ...any) {
				bad = append(bad, refProblem{i, j, fmt.Sprintf("extra %q: ", e.Name) + fmt.Sprintf(format, args...)})
			}
			t, ok := byName[e.To]
			if !ok {
				say("to: no resource is named %q (the list has %s)", e.To, strings.Join(names, ", "))
				continue
			}
			if e.HasFilter(FilterUnder) && !rs[t].Hierarchical() {
				say("filters: under needs a hierarchy, and %q has no parent field", e.To)
			}
			if e.To == r.Name && e.Required {
				say("required: a required reference to its own resource leaves the first record nothing to refer to (a record may not refer to itself); make it optional")
			}
			if sym := SelfRefSymbol(r, e); e.Type == TypeRef && e.To == r.Name && len(sym) > 64 {
				say("a reference to its own resource gets the foreign key %s, longer than MySQL's 64 characters; shorten the table or the field's name", sym)
			}
			if e.Type != TypeRefs {
				continue
			}
			owner, target := r.RefsColumns(e)
			if owner == target {
				say("name: a refs field may not be named like its resource (its table has a column %s for each side)", owner)
			}
			table := r.RefsTable(e)
			if len(table) > MaxTableName {
				say("its table %s is longer than %d characters; shorten the resource's table or the field's name", table, MaxTableName)
			}
			if other, dup := tables[table]; dup {
				say("its table %s is already the table of %s", table, other)
			}
			tables[table] = fmt.Sprintf("extra %q of %q", e.Name, r.Name)
			typ := strings.ToLower(r.RefsTypeName(e))
			if other, dup := types[typ]; dup {
				say("its Ent type %s is already the type of %s; rename the field or the resource", r.RefsTypeName(e), other)
			}
			types[typ] = fmt.Sprintf("extra %q of %q", e.Name, r.Name)
		}
	}
	return append(bad, cascadeCycles(rs, byName)...)
}

// cascadeCycles finds the cascade fields through which deleting a record
// could come back to a record of the same resource, and so go on for ever
// in a hierarchy of cascades: a field of O that cascades from T is on a
// cycle when deleting records of O can, by cascades, delete records of T.
func cascadeCycles(rs []Resource, byName map[string]int) []refProblem {
	type edge struct{ owner, extra int }
	from := map[int][]edge{} // target -> the cascade fields that refer to it
	for i, r := range rs {
		for j, e := range r.Extra {
			if e.Type == TypeRef && e.OnDelete == OnDeleteCascade {
				from[byName[e.To]] = append(from[byName[e.To]], edge{i, j})
			}
		}
	}
	// path returns the resources a delete of start's records cascades
	// through to reach goal, or nil.
	var path func(start, goal int, seen map[int]bool) []int
	path = func(start, goal int, seen map[int]bool) []int {
		if start == goal {
			return []int{goal}
		}
		if seen[start] {
			return nil
		}
		seen[start] = true
		for _, e := range from[start] {
			if p := path(e.owner, goal, seen); p != nil {
				return append([]int{start}, p...)
			}
		}
		return nil
	}
	var bad []refProblem
	for t, edges := range from {
		for _, e := range edges {
			p := path(e.owner, t, map[int]bool{})
			if p == nil {
				continue
			}
			chain := []string{rs[t].Name}
			for _, k := range p {
				chain = append(chain, rs[k].Name)
			}
			bad = append(bad, refProblem{e.owner, e.extra, fmt.Sprintf(
				"extra %q: on_delete: cascade closes a cycle of cascades (deleting %s), which need never end; use protect or set_null",
				rs[e.owner].Extra[e.extra].Name, strings.Join(chain, " deletes "))})
		}
	}
	slices.SortFunc(bad, func(a, b refProblem) int {
		if a.resource != b.resource {
			return a.resource - b.resource
		}
		return a.extra - b.extra
	})
	return bad
}
