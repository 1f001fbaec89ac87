package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"personnel/ent"
)

// Derived structures are what the service keeps beside a resource table so
// that a request reads a range of an index instead of walking the table:
// the substring index of each searched column (substring.go), the
// closure of a hierarchy (closure.go) and its subtree counts (subtree.go),
// the count of each block of ids (idblocks.go), and the number of writes
// (changes.go), which tells a replica that what it computed is still so.
// The store writes them in the transaction of every write that changes
// what they derive from, on every backend (no triggers: TiDB has none, and
// MySQL with binary logging lets only privileged users create them), and
// the database deletes a record's rows with the record (ON DELETE
// CASCADE), but for its subtree counts, which the delete drops itself.
//
// Like a kept count, a structure is only as good as its writers: a replica
// of a version that did not keep it, still running during a rolling
// upgrade, writes the table without it. So a structure answers requests
// only once it is trusted (personnel_derived), and until then the service
// answers from the table itself, as the earlier version did: slower, never
// wrong. A structure is trusted at once when its table is new (created by
// this version, so empty) and, on SQLite, which one process serves, after
// the start rebuilds it. On MySQL and PostgreSQL a structure added to a
// table that already holds records is trusted only after `personnel
// reindex`, which the README says to run once no replica of an earlier
// version is left; it rebuilds every structure while the service keeps
// serving, then trusts it.

// Structure is one derived structure of one resource table.
type Structure struct {
	Table ent.ResourceTable
	// Name tells the table's structures apart in personnel_derived:
	// "closure", or "substring:" and the folded column.
	Name string
	// Column is the folded column a substring index serves; "" otherwise.
	Column string
	kind   *structureKind
}

// structureKind is one kind of derived structure: which structures of it
// a resource table has, how to create them, and how to rebuild one whole.
type structureKind struct {
	// of returns the structures of this kind that t has.
	of func(t ent.ResourceTable) []Structure
	// create makes s's own tables when missing, and reports whether they
	// were. It runs in the migration (under its lock on MySQL and
	// PostgreSQL) and must be idempotent.
	create func(ctx context.Context, d *DB, s Structure) (created bool, err error)
	// rebuild makes s whole from its resource table. On MySQL and
	// PostgreSQL it runs while other replicas of this version write the
	// table, each keeping s as it writes: it must work in short
	// transactions that lock the records they rebuild, so that neither
	// overwrites the other's work with a stale view.
	// It returns how many records it went through.
	rebuild func(ctx context.Context, d *DB, s Structure) (records int, err error)
}

// structureKinds lists every kind of derived structure, in the order they
// are created and rebuilt: subtree counts count the closure.
var structureKinds = []*structureKind{substringKind, closureKind, subtreeCountKind, idBlockKind, changeKind}

// Structures returns every derived structure of every resource table.
func Structures() []Structure {
	var all []Structure
	for _, t := range ent.ResourceTables() {
		for _, k := range structureKinds {
			for _, s := range k.of(t) {
				s.Table, s.kind = t, k
				all = append(all, s)
			}
		}
	}
	return all
}

// trustRecheck is how long a replica goes on using the table instead of a
// structure it found untrusted before it asks again: the wait after
// `personnel reindex` before every replica uses what it rebuilt.
const trustRecheck = 5 * time.Second

// trustCache remembers, per structure, whether it is trusted. Trust only
// ever goes from false to true (a reindex), so a true answer is kept for
// good and a false one asked again after trustRecheck; a stale false
// answer costs speed, never correctness.
type trustCache struct {
	mu      sync.Mutex
	entries map[string]*trustEntry
}

type trustEntry struct {
	trusted atomic.Bool
	next    atomic.Int64 // when to ask the database again, in Unix nanoseconds
}

func trustKey(table, structure string) string { return table + "\x00" + structure }

func (c *trustCache) entry(table, structure string) *trustEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*trustEntry{}
	}
	k := trustKey(table, structure)
	e := c.entries[k]
	if e == nil {
		e = &trustEntry{}
		c.entries[k] = e
	}
	return e
}

// Trusted reports whether the structure of table may answer requests. It
// asks the database at most every trustRecheck while the answer is no, and
// never again once it is yes; a failed look-up counts as no.
func (d *DB) Trusted(ctx context.Context, table, structure string) bool {
	e := d.trust.entry(table, structure)
	if e.trusted.Load() {
		return true
	}
	now := time.Now().UnixNano()
	next := e.next.Load()
	if now < next || !e.next.CompareAndSwap(next, now+int64(trustRecheck)) {
		return false
	}
	trusted, _, err := d.derivedState(ctx, d.read, table, structure)
	if err != nil {
		return false
	}
	if trusted {
		e.trusted.Store(true)
	}
	return trusted
}

// derivedState reads the state of one structure: whether it is trusted,
// and whether it has a state at all.
func (d *DB) derivedState(ctx context.Context, c *ent.Client, table, structure string) (trusted, found bool, err error) {
	var t int
	s := d.SQL().Raw("SELECT ").Ident("trusted").Raw(" FROM ").Ident("personnel_derived").
		Raw(" WHERE ").Ident("table_name").Raw(" = ").Param().Raw(" AND ").Ident("structure").Raw(" = ").Param()
	err = QueryRow(ctx, c, s.String(), []any{table, structure}, &t)
	switch {
	case err == nil:
		return t == 1, true, nil
	case errors.Is(err, stdsql.ErrNoRows):
		return false, false, nil
	}
	return false, false, err
}

// setDerivedState records whether a structure is trusted, and tells this
// process at once.
func (d *DB) setDerivedState(ctx context.Context, table, structure string, trusted bool) error {
	t := 0
	if trusted {
		t = 1
	}
	err := d.InTx(ctx, func(tx *ent.Client) error {
		del := d.SQL().Raw("DELETE FROM ").Ident("personnel_derived").
			Raw(" WHERE ").Ident("table_name").Raw(" = ").Param().Raw(" AND ").Ident("structure").Raw(" = ").Param()
		if _, err := tx.ExecContext(ctx, del.String(), table, structure); err != nil {
			return err
		}
		ins := d.SQL().Raw("INSERT INTO ").Ident("personnel_derived").Raw(" (").Ident("table_name").Raw(", ").
			Ident("structure").Raw(", ").Ident("trusted").Raw(") VALUES (").Param().Raw(", ").Param().Raw(", ").Param().Raw(")")
		_, err := tx.ExecContext(ctx, ins.String(), table, structure, t)
		return err
	})
	if err == nil && trusted {
		d.trust.entry(table, structure).trusted.Store(true)
	}
	return err
}

// ensureStructures creates every derived structure that is missing and
// settles whether each may be trusted (see the comment at the top of this
// file); existed names the resource tables that existed before this
// migration (MySQL and PostgreSQL only).
func (d *DB) ensureStructures(ctx context.Context, existed map[string]bool) error {
	untrusted := map[string][]string{}
	for _, s := range Structures() {
		created, err := s.kind.create(ctx, d, s)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", s.Name, s.Table.Table, err)
		}
		trusted, found, err := d.derivedState(ctx, d.write, s.Table.Table, s.Name)
		if err != nil {
			return fmt.Errorf("state of %s of %s: %w", s.Name, s.Table.Table, err)
		}
		whole := found && trusted && !created
		if d.SQLite() {
			// One process serves a SQLite file: nothing else writes it
			// while this start rebuilds what is not known to be whole.
			if !whole {
				if err := d.rebuild(ctx, s); err != nil {
					return err
				}
			}
			continue
		}
		switch {
		case whole:
			d.trust.entry(s.Table.Table, s.Name).trusted.Store(true)
		case !found && !existed[s.Table.Table]:
			// A table this migration created: empty, and written by no
			// earlier version.
			if err := d.setDerivedState(ctx, s.Table.Table, s.Name, true); err != nil {
				return err
			}
		default:
			if !found || trusted {
				if err := d.setDerivedState(ctx, s.Table.Table, s.Name, false); err != nil {
					return err
				}
			}
			untrusted[s.Table.Table] = append(untrusted[s.Table.Table], s.Name)
		}
	}
	for table, names := range untrusted {
		slog.Warn("not using these structures of the table yet: replicas of an earlier version may still write it without "+
			"keeping them, so requests are answered from the table alone (slower); once no such replica is left, run "+
			"`personnel reindex`", "table", table, "structures", strings.Join(names, ", "))
	}
	return nil
}

// rebuild rebuilds s and trusts it.
func (d *DB) rebuild(ctx context.Context, s Structure) error {
	start := time.Now()
	n, err := s.kind.rebuild(ctx, d, s)
	if err != nil {
		return fmt.Errorf("rebuilding %s of %s: %w", s.Name, s.Table.Table, err)
	}
	if err := d.setDerivedState(ctx, s.Table.Table, s.Name, true); err != nil {
		return err
	}
	if n > 0 {
		slog.Info("rebuilt", "table", s.Table.Table, "structure", s.Name, "records", n,
			"took_s", time.Since(start).Round(time.Millisecond).Seconds())
	}
	return nil
}

// Reindex counts every resource table again and rebuilds every derived
// structure that is not trusted (every one, with all), then trusts them
// all: what an operator runs once no replica of an earlier version is left
// (README, "Upgrading"). A trusted structure has been kept by every write
// since it was new or last rebuilt, so only a repair (after writes behind
// the service's back) needs all. Replicas of this version may go on
// serving meanwhile; report, if set, is told of each structure before it
// is rebuilt or kept as it is.
func (d *DB) Reindex(ctx context.Context, all bool, report func(s Structure, rebuild bool)) error {
	if err := d.Recount(ctx); err != nil {
		return err
	}
	for _, s := range Structures() {
		created, err := s.kind.create(ctx, d, s)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", s.Name, s.Table.Table, err)
		}
		trusted, _, err := d.derivedState(ctx, d.write, s.Table.Table, s.Name)
		if err != nil {
			return fmt.Errorf("state of %s of %s: %w", s.Name, s.Table.Table, err)
		}
		rebuild := all || created || !trusted
		if report != nil {
			report(s, rebuild)
		}
		if !rebuild {
			continue
		}
		if err := d.rebuild(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
