// Package schema holds the Ent schemas. The hand-written files are this
// one (the mixin every reference resource shares), user.go and
// login_failure.go; the schema of each resource (department.go, area.go,
// ...) is generated from config/resources.yaml by cmd/resourcegen.
package schema

import (
	"strconv"

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

// Fields of a reference resource. Extra fields are nullable in the
// database whatever the API requires, so that adding one to a table that
// already holds records never fails; a default fills the existing rows.
func (r Reference) Fields() []ent.Field {
	res := r.Resource
	text := func(name, column string, size int) ent.Field {
		return field.String(name).StorageKey(column).Annotations(entsql.Annotation{Size: int64(size)})
	}
	fields := []ent.Field{
		text("code", res.Fields.Code, res.Limits.Code),
		text("code_fold", res.Fields.Code+"_fold", casefold.Expansion*res.Limits.Code),
		text("name", res.Fields.Name, res.Limits.Name),
		text("name_fold", res.Fields.Name+"_fold", casefold.Expansion*res.Limits.Name),
	}
	if res.Hierarchical() {
		fields = append(fields, field.Int("parent_id").StorageKey(res.Fields.Parent+"_id").Optional().Nillable())
	}
	for _, e := range res.Extra {
		fields = append(fields, extraField(e))
		if e.Folded() {
			fields = append(fields, field.String("x_"+e.Name+"_fold").StorageKey(e.Name+"_fold").Optional().Nillable().
				Annotations(entsql.Annotation{Size: int64(casefold.Expansion * e.MaxLength)}))
		}
	}
	return fields
}

// extraField is the Ent field of an extra field of the config. Field names
// are prefixed so that an extra field can never clash with the names Ent
// gives code, name and parent; the column is the API name.
func extraField(e config.ExtraField) ent.Field {
	name := "x_" + e.Name
	switch e.Type {
	case config.TypeInteger:
		f := field.Int64(name).StorageKey(e.Name).Optional().Nillable()
		if e.Default != nil {
			n, _ := strconv.ParseInt(*e.Default, 10, 64)
			f = f.Default(n)
		}
		return f
	case config.TypeBoolean:
		f := field.Bool(name).StorageKey(e.Name).Optional().Nillable()
		if e.Default != nil {
			f = f.Default(*e.Default == "true")
		}
		return f
	case config.TypeDate:
		// A date, not a time: DATE on MySQL and PostgreSQL, and a column
		// SQLite's driver reads back as a time because of its declared type.
		f := field.Time(name).StorageKey(e.Name).Optional().Nillable().
			SchemaType(map[string]string{dialect.MySQL: "date", dialect.Postgres: "date", dialect.SQLite: "date"})
		if e.Default != nil {
			f = f.Annotations(entsql.Default(*e.Default))
		}
		return f
	}
	size := e.MaxLength
	if e.Type == config.TypeChoice {
		size = config.MaxChoiceLength
	}
	f := field.String(name).StorageKey(e.Name).Optional().Nillable().Annotations(entsql.Annotation{Size: int64(size)})
	if e.Default != nil {
		f = f.Default(*e.Default)
	}
	return f
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

// Annotations name the table and mark the schema as a reference resource,
// which the template ent/template/resource.tmpl looks for.
func (r Reference) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entsql.Annotation{Table: r.Resource.Table},
		ResourceAnnotation{Resource: r.Resource.Name, Search: r.searchColumns()},
	}
}

// searchColumns are the folded columns that substring filters search.
func (r Reference) searchColumns() []string {
	cols := []string{r.Resource.Fields.Code + "_fold", r.Resource.Fields.Name + "_fold"}
	for _, e := range r.Resource.Extra {
		if e.Folded() && e.HasFilter(config.FilterIContains) {
			cols = append(cols, e.Name+"_fold")
		}
	}
	return cols
}

// ResourceAnnotation marks an Ent type as a reference resource, for code
// generation.
type ResourceAnnotation struct {
	Resource string   // the resource's name in config/resources.yaml
	Search   []string // the folded columns substring filters search
}

// Name implements schema.Annotation.
func (ResourceAnnotation) Name() string { return "Resource" }
