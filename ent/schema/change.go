package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Change is one entry of the change feed (db/feed.go): a record of a
// resource table written (upserted) or deleted, written in the transaction
// of the write, and numbered (seq) in commit order by the sequencer after
// it committed.
type Change struct {
	ent.Schema
}

// Fields of a change.
func (Change) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("seq").Optional().Nillable(), // the feed's order; null until sequenced
		field.String("table_name").MaxLen(64),
		field.Int64("record_id"),
		field.Bool("deleted"), // true: the record was deleted; false: written
		field.Int64("at"),     // when it was written, in Unix milliseconds
	}
}

// Indexes serve reading a table's feed in order, numbering what is not
// numbered yet, and finding the entries a later one supersedes.
func (Change) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("seq").Unique(),
		index.Fields("table_name", "seq"),
		index.Fields("table_name", "record_id"),
	}
}

// Annotations name the table.
func (Change) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_change"}}
}
