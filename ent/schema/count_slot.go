package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// CountSlot holds part of the number of records of one resource table, on
// the databases that cannot count a table quickly (MySQL and MariaDB count
// by walking an index). Every insert and delete adds to one slot, chosen
// at random, in its own transaction, so concurrent writers seldom wait for
// one another; the count is the sum of the table's slots. See db/count.go.
type CountSlot struct {
	ent.Schema
}

// Fields of a count slot.
func (CountSlot) Fields() []ent.Field {
	return []ent.Field{
		field.String("table_name").MaxLen(64),
		field.Int("slot"),
		field.Int64("records"),
	}
}

// Indexes: one row per table and slot.
func (CountSlot) Indexes() []ent.Index {
	return []ent.Index{index.Fields("table_name", "slot").Unique()}
}

// Annotations name the table.
func (CountSlot) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "personnel_count_slot"}}
}
