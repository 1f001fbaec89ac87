package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// AuditEntry is one change to one record of a resource, written in the
// transaction of the write that made it (db/audit.go): who, when, what.
// Entries are only inserted, and pruned when PERSONNEL_AUDIT_RETENTION says
// so. Times are Unix microseconds, which every backend stores and compares
// alike.
type AuditEntry struct {
	ent.Schema
}

// Fields of an audit entry.
func (AuditEntry) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("at"), // when, in Unix microseconds
		field.Int("actor_id").Optional().Nillable(),                      // the user's id; null for a command
		field.String("actor_username").MaxLen(150).Optional().Nillable(), // the user's name
		field.String("actor_command").MaxLen(64).Optional().Nillable(),   // the command ("seed", "import")
		field.String("request_id").MaxLen(128).Optional().Nillable(),
		field.String("resource").MaxLen(64),                                              // the resource's name
		field.Int64("record_id"),                                                         // the record's id
		field.String("action").MaxLen(8),                                                 // create, update or delete
		field.Text("changes").SchemaType(map[string]string{dialect.MySQL: "mediumtext"}), // {field: [before, after]} as JSON
	}
}

// Indexes serve the audit list's filters (newest first), a record's
// history, and pruning by age.
func (AuditEntry) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("resource", "record_id"),
		index.Fields("actor_username"),
		index.Fields("request_id"),
		index.Fields("at"),
	}
}

// Annotations name the table.
func (AuditEntry) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_audit"}}
}
