package db

import (
	"fmt"
	"slices"
)

// QueuedWrites returns how many writes wait for d's SQLite writer, so that
// tests can line writes up behind a write that holds it.
func QueuedWrites(d *DB) int { return len(d.group.queue) }

// KeeperNames returns the names of t's keepers, in the order they are
// told of a write: a structure's name, "audit" for the audit trail.
func KeeperNames(t *Table) []string {
	var names []string
	for _, k := range t.keepers {
		names = append(names, keeperName(k))
	}
	return names
}

func keeperName(k Keeper) string {
	switch k := k.(type) {
	case Structure:
		return k.Name()
	case *auditKeeper:
		return "audit"
	}
	return fmt.Sprintf("%T", k)
}

// KeepOnly leaves t only the keepers named (KeeperNames), so that a
// benchmark can time a write with some of them; restore gives it back all
// of them. The structures left out are no longer in step with the table.
func KeepOnly(t *Table, names ...string) (restore func()) {
	all := t.keepers
	t.keepers = nil
	for _, k := range all {
		if slices.Contains(names, keeperName(k)) {
			t.keepers = append(t.keepers, k)
		}
	}
	return func() { t.keepers = all }
}

// FeedPageQuery is the statement a page of a table's feed is read with;
// its arguments are the table, the cursor and how many.
func FeedPageQuery(d *DB) string { return d.feedPageQuery() }

// PreparedStmts returns how many statements d's MySQL statement cache
// keeps, and how many it keeps at most (per connection of the pool); -1,
// -1 when d has no such cache.
func PreparedStmts(d *DB) (kept, limit int) {
	c := d.prepared
	if c == nil {
		return -1, -1
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.stmts), c.limit
}

// ExecLater is execLater, for tests of what a write holds.
var ExecLater = execLater
