// Package schema holds the Ent schemas. The hand-written files are this
// one (the mixin every reference resource shares), user.go and
// login_failure.go; the schema of each resource (department.go, area.go,
// ...) is generated from config/resources.yaml by cmd/resourcegen.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"entgo.io/ent/schema/mixin"

	"personnel/casefold"
	"personnel/config"
	"personnel/record"
)

// Reference is the shape of a coded reference resource: a code unique
// regardless of letter case, a name, an optional parent of the same type
// (for a hierarchical resource), and the typed extra fields its config
// entry declares. Column names are the API field names, so a department is
// stored as dept_code, dept_name and parent_dept_id.
//
// Beside code and name (and strings that are searched or sorted) the mixin
// keeps case-folded copies (see package casefold), which the service fills
// on every write. Uniqueness, case-blind filters and ordering all work on
// the folded copies, which compare byte for byte on every backend.
type Reference struct {
	mixin.Schema
	Self     any             // the schema's Type method, for the self-referencing edge
	Resource config.Resource // the resource's entry in config/resources.yaml
}

// Fields of a reference resource, from its field table (package record),
// the one place its columns are worked out. Extra fields are nullable in
// the database whatever the API requires, so that adding one to a table
// that already holds records never fails; a default fills the existing
// rows.
func (r Reference) Fields() []ent.Field {
	fs := record.New(r.Resource)
	var fields []ent.Field
	for i := range fs.List {
		f := &fs.List[i]
		name := entName(fs, i)
		switch i {
		case fs.Code, fs.Name:
			fields = append(fields, text(name, f.Column, f.MaxLen))
		case fs.Parent:
			fields = append(fields, field.Int(name).StorageKey(f.Column).Optional().Nillable())
		default:
			fields = append(fields, extraField(name, f))
		}
		if f.Fold != "" {
			fold := text(name+"_fold", f.Fold, casefold.Expansion*f.MaxLen)
			if i != fs.Code && i != fs.Name {
				fold = field.String(name + "_fold").StorageKey(f.Fold).Optional().Nillable().
					Annotations(entsql.Annotation{Size: int64(casefold.Expansion * f.MaxLen)})
			}
			fields = append(fields, fold)
		}
	}
	return fields
}

// entName is the Ent name of field i: code, name and parent_id for the
// three the mixin always has, and extra fields prefixed so that they can
// never clash with those; the column is the API name.
func entName(fs record.Fields, i int) string {
	switch i {
	case fs.Code:
		return "code"
	case fs.Name:
		return "name"
	case fs.Parent:
		return "parent_id"
	}
	return "x_" + fs.List[i].Key
}

func text(name, column string, size int) ent.Field {
	return field.String(name).StorageKey(column).Annotations(entsql.Annotation{Size: int64(size)})
}

// extraField is the Ent field of an extra field.
func extraField(name string, f *record.Field) ent.Field {
	switch f.Kind {
	case record.KindInteger:
		e := field.Int64(name).StorageKey(f.Column).Optional().Nillable()
		if f.Default.Valid {
			e = e.Default(f.Default.Int)
		}
		return e
	case record.KindBoolean:
		e := field.Bool(name).StorageKey(f.Column).Optional().Nillable()
		if f.Default.Valid {
			e = e.Default(f.Default.Int == 1)
		}
		return e
	case record.KindDate:
		// A date, not a time: DATE on MySQL and PostgreSQL, and a column
		// SQLite's driver reads back as a time because of its declared type.
		e := field.Time(name).StorageKey(f.Column).Optional().Nillable().
			SchemaType(map[string]string{dialect.MySQL: "date", dialect.Postgres: "date", dialect.SQLite: "date"})
		if f.Default.Valid {
			e = e.Annotations(entsql.Default(f.Default.Str))
		}
		return e
	}
	e := field.String(name).StorageKey(f.Column).Optional().Nillable().Annotations(entsql.Annotation{Size: int64(f.MaxLen)})
	if f.Default.Valid {
		e = e.Default(f.Default.Str)
	}
	return e
}

// Edges bind parent_id to a self-referencing parent/children edge. The
// database refuses to delete a record that is still a parent (RESTRICT), so
// no race between a delete and a create can leave an orphan.
func (r Reference) Edges() []ent.Edge {
	if !r.Resource.Hierarchical() {
		return nil
	}
	return []ent.Edge{
		// The annotation must sit on the owning edge ("children"), before
		// From: chained after it, it would annotate the inverse edge, which
		// ent ignores for the foreign key.
		edge.To("children", r.Self).
			Annotations(entsql.OnDelete(entsql.Restrict)).
			From("parent").
			Field("parent_id").
			Unique(),
	}
}

// Indexes: the unique folded code enforces case-blind uniqueness on every
// backend; (name_fold, name) serves name ordering and exact name filters;
// parent_id serves children look-ups, the foreign key check on delete and
// the recursive hierarchy queries. The index on id alone looks redundant
// but is the narrowest structure in id order: a deep page walks it to find
// its ids (a deferred join) instead of stepping over whole rows. Extra
// fields that are filtered by value or sorted get an index each (sorted
// strings on their folded copy and value, as names).
func (r Reference) Indexes() []ent.Index {
	idx := []ent.Index{
		index.Fields("code_fold").Unique(),
		index.Fields("name_fold", "name"),
	}
	if r.Resource.Hierarchical() {
		idx = append(idx, index.Fields("parent_id"))
	}
	idx = append(idx, index.Fields("id"))
	for _, e := range r.Resource.Extra {
		switch {
		case e.Folded() && e.Ordering:
			idx = append(idx, index.Fields("x_"+e.Name+"_fold", "x_"+e.Name))
		case e.Indexed():
			idx = append(idx, index.Fields("x_"+e.Name))
		}
	}
	return idx
}

// Annotations name the table.
func (r Reference) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: r.Resource.Table}}
}
