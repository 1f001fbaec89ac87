package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Replica is a running replica of the service, as its heartbeat records
// it (db/trust.go): what it was built for tells whether it keeps every
// derived structure. Times are Unix milliseconds, which every backend
// stores and compares alike.
type Replica struct {
	ent.Schema
}

// Fields of Replica.
func (Replica) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").MaxLen(255),    // host and process id
		field.String("version").MaxLen(255), // the binary's version
		field.Int("schema_version"),         // the last migration step it knows
		field.Int64("started_at"),           // when it started
		field.Int64("seen_at"),              // its last heartbeat
	}
}

// Annotations name the table.
func (Replica) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_replica"}}
}
