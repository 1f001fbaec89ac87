package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// User is someone who may call the API: an editor (may write) or a viewer
// (reads only). Users are managed with `personnel user ...`.
type User struct {
	ent.Schema
}

// Fields of a user. TokensValidAfter invalidates every token issued before
// it: it moves forward when the password changes or the user is disabled.
func (User) Fields() []ent.Field {
	return []ent.Field{
		field.String("username").Unique().NotEmpty().MaxLen(150),
		field.String("password_hash").Sensitive(),
		field.Enum("role").Values("editor", "viewer"),
		field.Bool("active").Default(true),
		field.Time("tokens_valid_after").Default(wholeSecond).SchemaType(datetime),
		field.Time("created_at").Default(time.Now).Immutable().SchemaType(datetime),
		field.Time("updated_at").Default(time.Now).UpdateDefault(time.Now).SchemaType(datetime),
	}
}

// wholeSecond is now without its fraction. Tokens carry whole seconds, and
// MySQL rounds a fraction up on storing: an untruncated default could make
// a token issued in the user's first second look older than the user.
func wholeSecond() time.Time { return time.Now().Truncate(time.Second) }

// datetime keeps MySQL times clear of TIMESTAMP's 2038 limit.
var datetime = map[string]string{dialect.MySQL: "datetime"}

// Annotations name the table.
func (User) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_user"}}
}
