package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"

	"personnel/casefold"
)

// User is someone who may call the API: an editor (may write) or a viewer
// (reads only). Users are managed with `personnel user ...`.
type User struct {
	ent.Schema
}

// MaxUsername is the longest username, in characters (Django's limit).
const MaxUsername = 150

// Fields of a user.
//
// UsernameKey is the username as compared for uniqueness (casefold.Identifier:
// without regard to letter case or character width), so that "ADMIN",
// "ａｄｍｉｎ" and "admin" cannot be three users. It is empty (NULL) only
// for a user stored before keys existed whose key another such user already
// holds: look-alikes already in a database stay distinct users.
//
// TokenGeneration counts the password changes and disablings; a token
// carries the generation of its login and is void once it moves on.
// TokensValidAfter does the same by time for tokens issued before tokens
// carried a generation (and for replicas of that version).
func (User) Fields() []ent.Field {
	return []ent.Field{
		field.String("username").Unique().NotEmpty().MaxRuneLen(MaxUsername),
		field.String("username_key").Optional().Nillable().Unique().MaxRuneLen(casefold.Expansion * MaxUsername),
		field.Int64("token_generation").Default(0),
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
