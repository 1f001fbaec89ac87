package db

import (
	atlas "ariga.io/atlas/sql/schema"
	"ariga.io/atlas/sql/sqlite"
	"entgo.io/ent/dialect"

	"personnel/config"
	"personnel/record"
)

// The tables each structure keeps beside a resource table, described for
// the migration generator (cmd/migrationgen), which writes the steps that
// create and change them as it does for the Ent schemas' tables. Each
// structure's file says what its tables hold; this one says how they are
// declared on each database: ids as the resource table's, clustered by
// their primary key (WITHOUT ROWID on SQLite), and gram compared by code
// point (BINARY, "C", the binary collation of every MySQL table).

// StructureTable is a table a structure keeps beside a resource table.
type StructureTable struct {
	Resource  string // the resource table
	Structure string // the structure's name in personnel_derived
	Table     *atlas.Table
}

// SideTables returns the tables every structure of res keeps, as the Ent
// dialect d declares them; resTable is the resource table, which their
// foreign keys reference.
func SideTables(d string, res config.Resource, resTable *atlas.Table) []StructureTable {
	fs := record.New(res)
	s := sideSchema{d: d}
	var out []StructureTable
	add := func(structure string, t *atlas.Table) {
		out = append(out, StructureTable{Resource: res.Table, Structure: structure, Table: t})
	}
	for _, i := range fs.Indexed() {
		add(SubstringStructure(fs.List[i].Fold), s.substring(SubstringTable(res.Table, fs.List[i].Fold), resTable))
	}
	if fs.Hierarchical() {
		add(ClosureStructure, s.closure(ClosureTable(res.Table), resTable))
		add(ClosureStructure, s.counts(SubtreeCountTable(res.Table), "ancestor", s.id()))
	}
	add(CountStructure, s.counts(IDBlockTable(res.Table), "block", s.bigint()))
	changes := s.table(ChangeTable(res.Table), s.col("slot", s.int()), s.col("changes", s.bigint()))
	changes.SetPrimaryKey(atlas.NewPrimaryKey(changes.Columns[0]))
	add(CountStructure, changes)
	return out
}

type sideSchema struct{ d string }

func (s sideSchema) typ(name string) *atlas.ColumnType {
	return &atlas.ColumnType{Type: &atlas.IntegerType{T: name}}
}

// id is the type of a record id.
func (s sideSchema) id() *atlas.ColumnType {
	if s.d == dialect.SQLite {
		return s.typ("integer")
	}
	return s.typ("bigint")
}

func (s sideSchema) int() *atlas.ColumnType {
	switch s.d {
	case dialect.SQLite, dialect.Postgres:
		return s.typ("integer")
	}
	return s.typ("int")
}

func (s sideSchema) bigint() *atlas.ColumnType { return s.typ("bigint") }

func (s sideSchema) smallint() *atlas.ColumnType {
	if s.d == dialect.SQLite {
		return s.typ("integer")
	}
	return s.typ("smallint")
}

func (s sideSchema) gram() *atlas.ColumnType {
	switch s.d {
	case dialect.SQLite:
		return &atlas.ColumnType{Type: &atlas.StringType{T: "text"}}
	case dialect.Postgres:
		return &atlas.ColumnType{Type: &atlas.StringType{T: "character varying", Size: SubstringK}}
	}
	return &atlas.ColumnType{Type: &atlas.StringType{T: "varchar", Size: SubstringK}}
}

func (s sideSchema) col(name string, t *atlas.ColumnType) *atlas.Column {
	return &atlas.Column{Name: name, Type: t}
}

func (s sideSchema) table(name string, cols ...*atlas.Column) *atlas.Table {
	t := atlas.NewTable(name).AddColumns(cols...)
	if s.d == dialect.SQLite {
		t.AddAttrs(&sqlite.WithoutRowID{})
	}
	return t
}

// cascade is the foreign key of a side table's record id: its rows go
// with the record.
func (s sideSchema) cascade(t *atlas.Table, col *atlas.Column, resTable *atlas.Table) {
	onUpdate := atlas.NoAction
	if s.d == dialect.MySQL {
		onUpdate = atlas.Restrict
	}
	id, _ := resTable.Column("id")
	t.AddForeignKeys(atlas.NewForeignKey(shortName(t.Name + "_fk")).AddColumns(col).
		SetRefTable(resTable).AddRefColumns(id).SetOnUpdate(onUpdate).SetOnDelete(atlas.Cascade))
}

func (s sideSchema) substring(name string, resTable *atlas.Table) *atlas.Table {
	id, gram, lcp := s.col("id", s.id()), s.col("gram", s.gram()), s.col("lcp", s.smallint())
	t := s.table(name, id, gram, lcp)
	t.SetPrimaryKey(atlas.NewPrimaryKey(id, gram))
	s.cascade(t, id, resTable)
	// On MySQL every secondary index ends with the primary key already.
	parts := []*atlas.Column{gram, lcp, id}
	if s.d == dialect.MySQL {
		parts = parts[:2]
	}
	t.AddIndexes(atlas.NewIndex(substringGramIndex(name)).AddColumns(parts...))
	return t
}

func (s sideSchema) closure(name string, resTable *atlas.Table) *atlas.Table {
	desc, anc, depth := s.col("descendant", s.id()), s.col("ancestor", s.id()), s.col("depth", s.int())
	t := s.table(name, desc, anc, depth)
	t.SetPrimaryKey(atlas.NewPrimaryKey(desc, anc))
	s.cascade(t, desc, resTable)
	t.AddIndexes(atlas.NewIndex(closureIndex(name)).AddColumns(anc, desc, depth))
	return t
}

// counts is a count kept in slots: (key, slot, records).
func (s sideSchema) counts(name, key string, keyType *atlas.ColumnType) *atlas.Table {
	k, slot, records := s.col(key, keyType), s.col("slot", s.int()), s.col("records", s.bigint())
	t := s.table(name, k, slot, records)
	t.SetPrimaryKey(atlas.NewPrimaryKey(k, slot))
	return t
}
