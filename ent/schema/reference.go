// Package schema holds the Ent schemas. The hand-written files are this
// one (the mixin every reference resource shares), user.go and
// login_failure.go; the schema of each resource (department.go, area.go,
// ...) is generated from config/resources.yaml by cmd/resourcegen.
package schema

import (
	"crypto/sha256"
	"encoding/hex"

	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"entgo.io/ent/schema/mixin"

	"personnel/casefold"
	"personnel/config"
	"personnel/record"
)

// Reference is the shape of a coded reference resource: a code unique
// regardless of letter case, a name, an optional parent of the same type
// (for a hierarchical resource), and the typed extra fields its config
// entry declares. Column names are the API field names, so a department is
// stored as dept_code, dept_name and parent_dept_id.
//
// Beside code and name (and strings that are searched or sorted) the mixin
// keeps case-folded copies (see package casefold), which the service fills
// on every write. Uniqueness, case-blind filters and ordering all work on
// the folded copies, which compare byte for byte on every backend.
type Reference struct {
	mixin.Schema
	Self     any             // the schema's Type method, for the self-referencing edge
	Resource config.Resource // the resource's entry in config/resources.yaml
	// Targets are the Type methods of the resources its ref and refs
	// fields refer to, by field name; RefsTables those of the tables of
	// its refs fields (RefsTable), by field name.
	Targets, RefsTables map[string]any
	// ListedBy are the refs fields of other resources that refer to this
	// one: Ent makes a table of pairs only between two types that both
	// declare the edge.
	ListedBy []ListedBy
}

// ListedBy is a refs field of another resource that refers to this one.
type ListedBy struct {
	Owner    any    // the other resource's Type method
	Resource string // its name
	Field    string // the name of its refs field
}

// Fields of a reference resource, from its field table (package record),
// the one place its columns are worked out. Extra fields are nullable in
// the database whatever the API requires, so that adding one to a table
// that already holds records never fails; a default fills the existing
// rows.
func (r Reference) Fields() []ent.Field {
	fs := record.New(r.Resource)
	var fields []ent.Field
	for i := range fs.List {
		f := &fs.List[i]
		name := entName(fs, i)
		switch {
		case !f.Stored():
			continue // refs: the pairs are in a table of their own
		case i == fs.Code || i == fs.Name:
			fields = append(fields, text(name, f.Column, f.MaxLen))
		case i == fs.Parent || f.Kind == record.KindRef:
			fields = append(fields, field.Int(name).StorageKey(f.Column).Optional().Nillable())
		default:
			fields = append(fields, extraField(name, f))
		}
		if f.Fold != "" {
			fold := text(name+"_fold", f.Fold, casefold.Expansion*f.MaxLen)
			if i != fs.Code && i != fs.Name {
				fold = field.String(name + "_fold").StorageKey(f.Fold).Optional().Nillable().
					Annotations(entsql.Annotation{Size: int64(casefold.Expansion * f.MaxLen)})
			}
			fields = append(fields, fold)
		}
	}
	return fields
}

// entName is the Ent name of field i: code, name and parent_id for the
// three the mixin always has, and extra fields prefixed so that they can
// never clash with those (a ref's with _id, so that its edge can take the
// name without); the column is the API name.
func entName(fs record.Fields, i int) string {
	switch i {
	case fs.Code:
		return "code"
	case fs.Name:
		return "name"
	case fs.Parent:
		return "parent_id"
	}
	if fs.List[i].Kind == record.KindRef {
		return "x_" + fs.List[i].Key + "_id"
	}
	return "x_" + fs.List[i].Key
}

// symbol names a constraint or an index, within PostgreSQL's 63 bytes and
// MySQL's 64, as the store names its own (db's shortName): a long name is
// cut and ends with a hash of the whole.
func symbol(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:63-17] + "_" + hex.EncodeToString(sum[:8])
}

func text(name, column string, size int) ent.Field {
	return field.String(name).StorageKey(column).Annotations(entsql.Annotation{Size: int64(size)})
}

// extraField is the Ent field of an extra field.
func extraField(name string, f *record.Field) ent.Field {
	switch f.Kind {
	case record.KindInteger:
		e := field.Int64(name).StorageKey(f.Column).Optional().Nillable()
		if f.Default.Valid {
			e = e.Default(f.Default.Int)
		}
		return e
	case record.KindBoolean:
		e := field.Bool(name).StorageKey(f.Column).Optional().Nillable()
		if f.Default.Valid {
			e = e.Default(f.Default.Int == 1)
		}
		return e
	case record.KindDate:
		// A date, not a time: DATE on MySQL and PostgreSQL, and a column
		// SQLite's driver reads back as a time because of its declared type.
		e := field.Time(name).StorageKey(f.Column).Optional().Nillable().
			SchemaType(map[string]string{dialect.MySQL: "date", dialect.Postgres: "date", dialect.SQLite: "date"})
		if f.Default.Valid {
			e = e.Annotations(entsql.Default(f.Default.Str))
		}
		return e
	}
	e := field.String(name).StorageKey(f.Column).Optional().Nillable().Annotations(entsql.Annotation{Size: int64(f.MaxLen)})
	if f.Default.Valid {
		e = e.Default(f.Default.Str)
	}
	return e
}

// Edges bind parent_id to a self-referencing parent/children edge. The
// database refuses to delete a record that is still a parent (RESTRICT), so
// no race between a delete and a create can leave an orphan.
//
// Each ref field's column is bound to an edge to the resource it refers
// to, and each refs field is an edge through the table of its pairs
// (RefsTable). Their foreign keys RESTRICT too: what deleting a
// referenced record does to those that refer to it (its on_delete rule)
// is done by the service, through the referring table's write hook
// (db/refs.go), so that every structure and record kept beside a table
// sees the change; the database only refuses what the service missed.
func (r Reference) Edges() []ent.Edge {
	var edges []ent.Edge
	if r.Resource.Hierarchical() {
		// The annotation must sit on the owning edge ("children"), before
		// From: chained after it, it would annotate the inverse edge, which
		// ent ignores for the foreign key.
		edges = append(edges, edge.To("children", r.Self).
			Annotations(entsql.OnDelete(entsql.Restrict)).
			From("parent").
			Field("parent_id").
			Unique())
	}
	self := func(e config.ExtraField) bool { return e.To == r.Resource.Name }
	for _, e := range r.Resource.Extra {
		switch {
		case e.Type == config.TypeRef && self(e):
			// A reference to the same resource is a pair of edges, as the
			// parent is: a lone edge to its own type would be one-to-one.
			// Ent names its foreign key (config.SelfRefSymbol).
			edges = append(edges, edge.To("x_by_"+e.Name, r.Self).
				Annotations(entsql.OnDelete(entsql.Restrict)).
				From("x_"+e.Name).
				Field("x_"+e.Name+"_id").
				Unique())
		case e.Type == config.TypeRef:
			edges = append(edges, edge.To("x_"+e.Name, r.Targets[e.Name]).
				Field("x_"+e.Name+"_id").
				StorageKey(edge.Symbol(symbol(r.Resource.Table+"_"+e.Name+"_fk"))).
				Unique().
				Annotations(entsql.OnDelete(entsql.Restrict)))
		case e.Type == config.TypeRefs && self(e):
			// Both sides are this type: the columns, named, tell them apart.
			owner, target := r.Resource.RefsColumns(e)
			edges = append(edges, edge.To("x_"+e.Name, r.Self).
				StorageKey(edge.Columns(owner, target)).
				Through("x_"+e.Name+"_pairs", r.RefsTables[e.Name]))
		case e.Type == config.TypeRefs:
			edges = append(edges, edge.To("x_"+e.Name, r.Targets[e.Name]).
				Through("x_"+e.Name+"_pairs", r.RefsTables[e.Name]))
		}
	}
	for _, l := range r.ListedBy {
		edges = append(edges, edge.From("x_listed_by_"+l.Resource+"_"+l.Field, l.Owner).Ref("x_"+l.Field))
	}
	return edges
}

// Indexes: the unique folded code enforces case-blind uniqueness on every
// backend; (name_fold, name) serves name ordering and exact name filters;
// parent_id serves children look-ups, the foreign key check on delete and
// the recursive hierarchy queries. The index on id alone looks redundant
// but is the narrowest structure in id order: a deep page walks it to find
// its ids (a deferred join) instead of stepping over whole rows. Extra
// fields that are filtered by value or sorted get an index each (sorted
// strings on their folded copy and value, as names).
func (r Reference) Indexes() []ent.Index {
	idx := []ent.Index{
		index.Fields("code_fold").Unique(),
		index.Fields("name_fold", "name"),
	}
	if r.Resource.Hierarchical() {
		idx = append(idx, index.Fields("parent_id"))
	}
	idx = append(idx, index.Fields("id"))
	for _, e := range r.Resource.Extra {
		switch {
		case e.Type == config.TypeRef:
			idx = append(idx, index.Fields("x_"+e.Name+"_id"))
		case e.Folded() && e.Ordering:
			idx = append(idx, index.Fields("x_"+e.Name+"_fold", "x_"+e.Name))
		case e.Indexed():
			idx = append(idx, index.Fields("x_"+e.Name))
		}
	}
	return idx
}

// Annotations name the table.
func (r Reference) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: r.Resource.Table}}
}

// RefsTable is the shape of the table of a refs field (config's
// RefsTable): one row for each record and each record it refers to,
// (<resource>_id, <field>_id), the primary key, which reads the ids of a
// page of records; and the same the other way round, which finds the
// records that refer to one (a filter, a delete). Both foreign keys
// RESTRICT: the service deletes the rows of a record itself, with the
// record, and takes a deleted referenced record out of every list through
// the referring table's write hook.
type RefsTable struct {
	mixin.Schema
	Owner, Target             any    // the Type methods of the resource and of the one referred to
	Table                     string // the table
	OwnerColumn, TargetColumn string // the record's id, and the id it refers to
}

// Fields are the two ids.
func (t RefsTable) Fields() []ent.Field {
	return []ent.Field{field.Int(t.OwnerColumn), field.Int(t.TargetColumn)}
}

// Edges bind each id to its resource.
func (t RefsTable) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("owner", t.Owner).Unique().Required().Field(t.OwnerColumn).
			StorageKey(edge.Symbol(symbol(t.Table + "_owner_fk"))).Annotations(entsql.OnDelete(entsql.Restrict)),
		edge.To("target", t.Target).Unique().Required().Field(t.TargetColumn).
			StorageKey(edge.Symbol(symbol(t.Table + "_target_fk"))).Annotations(entsql.OnDelete(entsql.Restrict)),
	}
}

// Indexes: the referenced id first, for the records that refer to one.
func (t RefsTable) Indexes() []ent.Index {
	return []ent.Index{index.Fields(t.TargetColumn, t.OwnerColumn).StorageKey(symbol(t.Table + "_by_target"))}
}

// Annotations name the table and make the pair its key.
func (t RefsTable) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: t.Table}, field.ID(t.OwnerColumn, t.TargetColumn)}
}
