package config

// Mechanisms are the performance mechanisms PERSONNEL_WITHOUT may turn
// off, each true when turned off. Each must show, in one run against the
// same code without it, what it wins (BENCHMARKS.md); the switch is how
// that run is made. Answers are the same either way.
type Mechanisms struct {
	// IDBlocks: a deep page of the whole table in id order is found by
	// OFFSET, not from the kept counts of id blocks.
	IDBlocks bool
	// StoredCount: a list of the whole table is counted by COUNT(*), not
	// answered by the kept record count.
	StoredCount bool
	// CountCache: the counts of searches and filtered lists are counted
	// on every request, not kept by the replica while the table's change
	// number stays the same.
	CountCache bool
	// Planner: a search goes through its substring index for both its
	// count and its page, without weighing a walk of the table against it.
	Planner bool
	// GroupCommit: on SQLite each write commits on its own, not batched
	// with the writes queued behind it.
	GroupCommit bool
	// MySQLPrepared: on MySQL, MariaDB and TiDB, reads outside a
	// transaction have their arguments interpolated by the driver, not
	// run as statements prepared once per connection.
	MySQLPrepared bool
	// WritePipeline: on MySQL and PostgreSQL, each statement of a write
	// is a round trip of its own, not held and sent with the next one.
	WritePipeline bool
}

// MechanismNames are the names PERSONNEL_WITHOUT takes, in order.
var MechanismNames = []string{"id_blocks", "stored_count", "count_cache", "planner", "group_commit", "mysql_prepared", "write_pipeline"}

// named returns the field of m that name turns off.
func (m *Mechanisms) named(name string) (*bool, bool) {
	switch name {
	case "id_blocks":
		return &m.IDBlocks, true
	case "stored_count":
		return &m.StoredCount, true
	case "count_cache":
		return &m.CountCache, true
	case "planner":
		return &m.Planner, true
	case "group_commit":
		return &m.GroupCommit, true
	case "mysql_prepared":
		return &m.MySQLPrepared, true
	case "write_pipeline":
		return &m.WritePipeline, true
	}
	return nil, false
}
