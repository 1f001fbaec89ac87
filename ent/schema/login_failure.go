package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// LoginFailure records one failed login against a subject ("user:<name>" or
// "addr:<ip>"). Rows are only ever inserted and aged out, so replicas
// throttling the same client never contend for a shared counter.
type LoginFailure struct {
	ent.Schema
}

// Fields of a login failure.
func (LoginFailure) Fields() []ent.Field {
	return []ent.Field{
		field.String("subject").MaxLen(200),
		field.Time("at").SchemaType(map[string]string{dialect.MySQL: "datetime(3)"}),
	}
}

// Indexes serve counting a key's recent failures and aging out old ones.
func (LoginFailure) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("subject", "at"),
		index.Fields("at"),
	}
}

// Annotations name the table.
func (LoginFailure) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_login_failure"}}
}
