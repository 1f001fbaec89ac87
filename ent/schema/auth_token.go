package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// AuthToken is a user's API key for "Authorization: Token <key>" (Django REST
// Framework's authtoken), from POST /api-token-auth/. The key itself is
// never stored: it is an HMAC, under the server secret, of the user, this
// row's random salt and the user's credential state (see package auth), so
// a copy of the database yields no working key. The row keeps the salt, so
// every login answers the same key, and a SHA-256 of the key, by which a
// presented key is found with one indexed look-up. Deleting the row
// (`personnel user revoke-token`) or the user voids the key.
type AuthToken struct {
	ent.Schema
}

// Fields of an API key.
func (AuthToken) Fields() []ent.Field {
	return []ent.Field{
		field.Int("user_id").Unique().Immutable(),
		field.String("salt").Sensitive().MaxLen(64).Immutable(),
		field.String("key_hash").Unique().MaxLen(64),
		field.Time("created_at").Default(time.Now).Immutable().SchemaType(datetime),
	}
}

// Edges tie the key to its user; the database deletes it with the user.
func (AuthToken) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("user", User.Type).Field("user_id").Unique().Required().Immutable().
			Annotations(entsql.OnDelete(entsql.Cascade)),
	}
}

// Indexes: one key per user. (Unique on the edge's field alone does not
// make Ent create the index.)
func (AuthToken) Indexes() []ent.Index {
	return []ent.Index{index.Fields("user_id").Unique()}
}

// Annotations name the table.
func (AuthToken) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_auth_token"}}
}
