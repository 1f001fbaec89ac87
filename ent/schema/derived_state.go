package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// DerivedState says, for each structure the service keeps beside a
// resource table (a substring index, a hierarchy's closure; db/derived.go),
// whether it is whole and may answer requests: not while replicas of a
// version that did not keep it may still be writing the table.
type DerivedState struct {
	ent.Schema
}

// Fields of a derived structure's state.
func (DerivedState) Fields() []ent.Field {
	return []ent.Field{
		field.String("table_name").MaxLen(64),
		field.String("structure").MaxLen(128),
		// 1 once the structure is whole and kept by every writer (the
		// trust rule: db/trust.go).
		field.Int("trusted"),
		// The schema version (migration step) that created the structure:
		// replicas built for an earlier schema do not keep it.
		field.Int("since").Default(0),
	}
}

// Indexes: one row per table and structure.
func (DerivedState) Indexes() []ent.Index {
	return []ent.Index{index.Fields("table_name", "structure").Unique()}
}

// Annotations name the table.
func (DerivedState) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_derived"}}
}
