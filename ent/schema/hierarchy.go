// Package schema holds the Ent schemas. Only this file is written by hand:
// the mixin every hierarchical reference resource shares. The schema of each
// resource (department.go, area.go, ...) is generated from
// config/resources.yaml by cmd/resourcegen.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"entgo.io/ent/schema/mixin"

	"personnel/casefold"
)

// Hierarchy is the shape of a coded reference hierarchy: a code unique
// regardless of letter case, a name, and an optional parent of the same
// type. Column names come from the resource's API field names, so a
// department is stored as dept_code, dept_name and parent_dept_id.
//
// Beside code and name the mixin keeps their case-folded copies (see package
// casefold); the service fills them on every write. Uniqueness, case-blind
// filters and ordering all work on the folded copies, which compare byte
// for byte on every backend.
type Hierarchy struct {
	mixin.Schema
	Self      any    // the schema's Type method, for the self-referencing edge
	Table     string // table name
	Code      string // API and column name of the code
	Name      string // API and column name of the name
	Parent    string // API name of the parent; its column is Parent+"_id"
	CodeLimit int    // longest code, in characters
	NameLimit int    // longest name, in characters
}

// Fields of a hierarchical resource.
func (h Hierarchy) Fields() []ent.Field {
	return []ent.Field{
		field.String("code").StorageKey(h.Code).
			Annotations(entsql.Annotation{Size: int64(h.CodeLimit)}),
		field.String("code_fold").StorageKey(h.Code + "_fold").
			Annotations(entsql.Annotation{Size: int64(casefold.Expansion * h.CodeLimit)}),
		field.String("name").StorageKey(h.Name).
			Annotations(entsql.Annotation{Size: int64(h.NameLimit)}),
		field.String("name_fold").StorageKey(h.Name + "_fold").
			Annotations(entsql.Annotation{Size: int64(casefold.Expansion * h.NameLimit)}),
		field.Int("parent_id").StorageKey(h.Parent + "_id").Optional().Nillable(),
	}
}

// Edges bind parent_id to a self-referencing parent/children edge. The
// database refuses to delete a record that is still a parent (RESTRICT), so
// no race between a delete and a create can leave an orphan.
func (h Hierarchy) Edges() []ent.Edge {
	return []ent.Edge{
		// The annotation must sit on the owning edge ("children"), before
		// From: chained after it, it would annotate the inverse edge, which
		// ent ignores for the foreign key.
		edge.To("children", h.Self).
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
// its ids (a deferred join) instead of stepping over whole rows.
func (h Hierarchy) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("code_fold").Unique(),
		index.Fields("name_fold", "name"),
		index.Fields("parent_id"),
		index.Fields("id"),
	}
}

// Annotations name the table and mark the schema as a hierarchy, which the
// store adapter template (ent/template/hierarchy.tmpl) looks for.
func (h Hierarchy) Annotations() []schema.Annotation {
	return []schema.Annotation{
		entsql.Annotation{Table: h.Table},
		HierarchyAnnotation{Enabled: true},
	}
}

// HierarchyAnnotation marks an Ent type as a hierarchical reference
// resource, for code generation.
type HierarchyAnnotation struct {
	// Enabled is always true: an annotation without fields would reach the
	// templates as an empty map, which they cannot tell from a missing one.
	Enabled bool
}

// Name implements schema.Annotation.
func (HierarchyAnnotation) Name() string { return "Hierarchy" }
