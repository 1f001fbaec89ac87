package resource

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"personnel/db"
)

// A search that matches many records costs what it matches to count
// (23,000 to 29,000 index entries for a common word at 1,000,000 records),
// on every request, while the page itself is found after a few hundred
// rows. So a replica keeps the counts of searches it made, each with the
// change number of the table (db/count.go) read in the statement that
// counted, and answers a count again while the change number is the same:
// no write, from any replica, has committed since, so the count is what
// counting again would give. The statement that would count reads the
// change number first and counts only if it moved (keptUnless), so a
// count still good costs a read of a few rows, and one gone stale costs
// what counting cost before.
//
// Nothing here can be stale: the change number is read from the database
// by every request that uses a kept count, after the request began, so a
// write acknowledged before it is seen. A count is kept only while the
// change number is trusted (every replica keeps it).

// countCacheSize bounds the counts kept per resource; a full cache drops
// one at random for each new one.
const countCacheSize = 1024

// countKeyMax bounds the length of what a count is kept for; longer
// searches are counted each time.
const countKeyMax = 512

// countCache holds the counts of searches of one resource, by what was
// counted.
type countCache struct {
	mu sync.Mutex
	m  map[string]keptCount
}

// keptCount is a count and the change number of the table it was counted
// at.
type keptCount struct {
	changes int64
	n       int
}

func (c *countCache) get(key string) (keptCount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[key]
	return k, ok
}

func (c *countCache) put(key string, changes int64, n int) {
	if len(key) > countKeyMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]keptCount{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= countCacheSize {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = keptCount{changes: changes, n: n}
}

// numbered reports whether the table's change number may vouch for kept
// counts.
func (r *Resource) numbered(ctx context.Context) bool {
	return !r.opts.Without.CountCache && r.db.Trusted(ctx, r.desc.Table, db.CountStructure)
}

// state is what one statement reads of the table as it is now: its change
// number and its kept count (an estimate when not trusted: see total).
type state struct {
	changes int64
	total   int
}

// readState reads the table's change number and size, in one statement.
func (r *Resource) readState(ctx context.Context) (state, error) {
	q := r.newSQL().Raw("SELECT ")
	r.table.ChangeNumber(q).Raw(", ")
	r.table.KeptCount(q)
	var st state
	err := db.QueryRow(ctx, r.db.Reader(), q.String(), q.Args, &st.changes, &st.total)
	st.total = orLarge(st.total)
	return st, err
}

// keptAt returns the count kept for key if it was counted at the change
// number now holds.
func (r *Resource) keptAt(key string, now int64) (int, bool) {
	k, ok := r.counts.get(key)
	if !ok || k.changes != now {
		return 0, false
	}
	return k.n, true
}

// keptUnless begins, in a statement's select list, a count that is made
// only if the table's change number is no longer changes (the one its
// kept count was counted at), and is -1 otherwise: "CASE WHEN <number> =
// changes THEN -1 ELSE", to be followed by the count's scalar subquery
// and "END". The databases evaluate a CASE's branches only as reached, so
// a count still good costs a read of the change number, in the statement
// that would otherwise have counted.
func (r *Resource) keptUnless(q *db.SQL, changes int64) {
	q.Raw("CASE WHEN ")
	r.table.ChangeNumber(q).Raw(" = ").Arg(changes).Raw(" THEN -1 ELSE ")
}

// filtersKey names what the count of a list with filters fs counts.
func filtersKey(fs []Filter) string {
	var b strings.Builder
	b.WriteString("list")
	for _, f := range fs {
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(f.Field))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(f.Op)))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatBool(f.Value.Valid))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(f.Value.Int, 10))
		for _, id := range f.Value.IDs {
			b.WriteByte(',')
			b.WriteString(strconv.FormatInt(id, 10))
		}
		b.WriteByte(' ')
		// Its length first, so that no value reads as more filters.
		b.WriteString(strconv.Itoa(len(f.Value.Str)))
		b.WriteByte(' ')
		b.WriteString(f.Value.Str)
	}
	return b.String()
}
