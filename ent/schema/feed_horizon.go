package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// FeedHorizon is, per resource table, the last change of the feed pruned
// after PERSONNEL_CHANGES_RETENTION (db/feed.go): a cursor before it may
// have missed a deletion, and is answered 410 Gone.
type FeedHorizon struct {
	ent.Schema
}

// Fields of a feed horizon.
func (FeedHorizon) Fields() []ent.Field {
	return []ent.Field{
		field.String("table_name").MaxLen(64).Unique(),
		field.Int64("seq"),
	}
}

// Annotations name the table.
func (FeedHorizon) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_feed_horizon"}}
}
