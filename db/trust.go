package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// When a derived structure may answer reads (the trust rule)
//
// A structure kept beside a resource table (a substring index, a closure,
// the counts) is only as good as its writers: a replica that does not know
// it (an older version, during a rolling upgrade) writes the table
// without it. So reads use a structure only once it is trusted, and until
// then answer from the table itself: slower, never wrong. This file is the
// one place that decides.
//
//   - The state of each structure is a row of personnel_derived: trusted
//     or not, and since, the schema version (the last migration step) that
//     created it. The migration step that creates a structure writes that
//     row: trusted when it creates the table too (an empty table is whole),
//     untrusted when the table already holds records.
//   - Every running replica records itself in personnel_replica: its
//     version, the schema version it was built for, and a heartbeat every
//     heartbeatEvery. A replica is live while its heartbeat is younger than
//     liveFor. A replica refuses to start on a database migrated past the
//     schema it knows, so no replica older than a structure starts once
//     the structure exists.
//   - An untrusted structure becomes trusted only by a rebuild that no
//     older replica can undercut: the rebuild starts only when no live
//     replica was built for a schema before the structure's since, and
//     trusts it only if, when it ends, none is live and none started
//     meanwhile. Every replica tries that in the background (one at a time
//     per database, under a lock); `personnel reindex` does it at once, or
//     refuses, naming the older replicas.
//   - Trust only ever goes from no to yes: a start or a rebuild never turns
//     a structure other replicas use back to untrusted. (A migration step
//     that drops a structure deletes its row, and replicas read every state
//     again at each heartbeat.)

// Structure is a keeper whose structure answers reads once it is trusted.
type Structure interface {
	Keeper
	// Name tells the table's structures apart in personnel_derived.
	Name() string
	// Rebuild makes the structure whole from its table, in short
	// transactions that lock what they rebuild, while writes go on. It
	// returns how many records it went through.
	Rebuild(ctx context.Context) (int, error)
	// Check compares the structure with its table and returns an error
	// naming the first difference: for tests and the crash test.
	Check(ctx context.Context) error
}

// How often a replica records that it is alive, and how long after its
// last heartbeat it counts as gone.
const (
	heartbeatEvery = 5 * time.Second
	liveFor        = 30 * time.Second
	// forgetAfter is how long the row of a replica that stopped without
	// removing it is kept: a rebuild that began before it started can
	// still see it.
	forgetAfter = 24 * time.Hour
)

// trustRecheck is how long a replica goes on answering from the table
// for a structure it found untrusted before it asks again.
const trustRecheck = 5 * time.Second

// trustCache remembers, per structure, whether it is trusted. A true
// answer is kept until the next heartbeat reads every state again; a
// false one is asked again after trustRecheck.
type trustCache struct {
	mu      sync.Mutex
	entries map[string]*trustEntry
}

type trustEntry struct {
	trusted atomic.Bool
	next    atomic.Int64 // when to ask the database again, in Unix nanoseconds
}

func (c *trustCache) entry(table, structure string) *trustEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*trustEntry{}
	}
	k := table + "\x00" + structure
	e := c.entries[k]
	if e == nil {
		e = &trustEntry{}
		c.entries[k] = e
	}
	return e
}

// Trusted reports whether the structure of table may answer reads. While
// the answer is no it asks the database at most every trustRecheck; a
// failed look-up counts as no.
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
	st, err := d.structureState(ctx, EntTx{d.read}, table, structure)
	if err != nil {
		return false
	}
	e.trusted.Store(st.trusted)
	return st.trusted
}

// TrustedNow is Trusted without a statement in the caller's: it reports
// whether the structure of table is known to be trusted, and when it is
// not, asks the database in the background (at most every trustRecheck,
// as Trusted does), so that a later call may say yes. For a read that
// can do without the structure and must not cost a statement more.
func (d *DB) TrustedNow(table, structure string) bool {
	e := d.trust.entry(table, structure)
	if e.trusted.Load() {
		return true
	}
	if time.Now().UnixNano() >= e.next.Load() {
		go d.Trusted(context.Background(), table, structure)
	}
	return false
}

// refreshTrust reads every structure's state again: what a heartbeat does,
// so that a structure a migration dropped stops answering.
func (d *DB) refreshTrust(ctx context.Context) error {
	seen := map[string]bool{}
	err := queryRows(ctx, EntTx{d.read}, d.Render("SELECT table_name, structure, trusted FROM {derived}", Names{"derived": derivedTable}), func(scan func(dest ...any) error) error {
		var table, structure string
		var trusted int
		if err := scan(&table, &structure, &trusted); err != nil {
			return err
		}
		d.trust.entry(table, structure).trusted.Store(trusted == 1)
		seen[table+"\x00"+structure] = true
		return nil
	})
	if err != nil {
		return err
	}
	d.trust.mu.Lock()
	defer d.trust.mu.Unlock()
	for k, e := range d.trust.entries {
		if !seen[k] {
			e.trusted.Store(false)
		}
	}
	return nil
}

// derivedTable holds the state of every derived structure.
const derivedTable = "personnel_derived"

// replicaTable holds the running replicas.
const replicaTable = "personnel_replica"

type structureState struct {
	found   bool
	trusted bool
	since   int
}

func (d *DB) structureState(ctx context.Context, tx Tx, table, structure string) (structureState, error) {
	var trusted, since int
	q := d.Render("SELECT trusted, since FROM {derived} WHERE table_name = ? AND structure = ?", Names{"derived": derivedTable})
	err := scanOne(tx.Query(ctx, q, table, structure))(&trusted, &since)
	switch {
	case err == nil:
		return structureState{found: true, trusted: trusted == 1, since: since}, nil
	case errors.Is(err, stdsql.ErrNoRows):
		return structureState{}, nil
	}
	return structureState{}, err
}

// Replica is a running replica as personnel_replica records it.
type Replica struct {
	Name    string // host and process id
	Version string // the binary's version
	Schema  int    // the last migration step the binary knows
	Started time.Time
	Seen    time.Time // its last heartbeat
}

func (r Replica) String() string {
	return fmt.Sprintf("%s (version %s, schema %d, last seen %s)", r.Name, r.Version, r.Schema, r.Seen.UTC().Format(time.RFC3339))
}

// replicas returns the replicas recorded (live or not).
func (d *DB) replicas(ctx context.Context, tx Tx) ([]Replica, error) {
	var out []Replica
	q := d.Render("SELECT name, version, schema_version, started_at, seen_at FROM {replica}", Names{"replica": replicaTable})
	err := queryRows(ctx, tx, q, func(scan func(dest ...any) error) error {
		var r Replica
		var started, seen int64
		if err := scan(&r.Name, &r.Version, &r.Schema, &started, &seen); err != nil {
			return err
		}
		r.Started, r.Seen = time.UnixMilli(started), time.UnixMilli(seen)
		out = append(out, r)
		return nil
	})
	return out, err
}

// olderReplicas returns the replicas that may write without keeping a
// structure created at schema version since: live ones built for an
// earlier schema, and (with after set) any such that started after it.
func (d *DB) olderReplicas(ctx context.Context, tx Tx, since int, after time.Time) ([]Replica, error) {
	all, err := d.replicas(ctx, tx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var older []Replica
	for _, r := range all {
		if r.Schema >= since {
			continue
		}
		if now.Sub(r.Seen) < liveFor || !after.IsZero() && r.Started.After(after) {
			older = append(older, r)
		}
	}
	return older, nil
}

// OlderReplicasError is the refusal of a rebuild while replicas that do
// not keep the structure may still write its table.
type OlderReplicasError struct {
	Table, Structure string
	Replicas         []Replica
}

func (e *OlderReplicasError) Error() string {
	names := make([]string, len(e.Replicas))
	for i, r := range e.Replicas {
		names[i] = r.String()
	}
	return fmt.Sprintf("not rebuilding %s of %s: replicas built for an earlier schema may still write it without keeping it: %s; "+
		"stop them (or wait %s after they stop) and try again", e.Structure, e.Table, strings.Join(names, "; "), liveFor)
}

// Rebuild rebuilds s of t and trusts it, unless a replica that does not
// keep it may write its table meanwhile (an *OlderReplicasError).
func (d *DB) Rebuild(ctx context.Context, t *Table, s Structure) (int, error) {
	st, err := d.structureState(ctx, EntTx{d.write}, t.Name, s.Name())
	if err != nil {
		return 0, err
	}
	started := time.Now()
	older, err := d.olderReplicas(ctx, EntTx{d.write}, st.since, time.Time{})
	if err != nil {
		return 0, err
	}
	if len(older) > 0 {
		return 0, &OlderReplicasError{Table: t.Name, Structure: s.Name(), Replicas: older}
	}
	n, err := s.Rebuild(ctx)
	if err != nil {
		return n, fmt.Errorf("rebuilding %s of %s: %w", s.Name(), t.Name, err)
	}
	err = d.InTx(ctx, func(tx Tx) error {
		older, err := d.olderReplicas(ctx, tx, st.since, started)
		if err != nil {
			return err
		}
		if len(older) > 0 {
			return &OlderReplicasError{Table: t.Name, Structure: s.Name(), Replicas: older}
		}
		return d.setTrusted(ctx, tx, t.Name, s.Name(), st.since)
	})
	if err != nil {
		return n, err
	}
	d.trust.entry(t.Name, s.Name()).trusted.Store(true)
	slog.Info("rebuilt", "table", t.Name, "structure", s.Name(), "records", n,
		"took_s", time.Since(started).Round(time.Millisecond).Seconds())
	return n, nil
}

// setTrusted records that a structure is trusted.
func (d *DB) setTrusted(ctx context.Context, tx Tx, table, structure string, since int) error {
	names := Names{"derived": derivedTable}
	st, err := d.structureState(ctx, tx, table, structure)
	if err != nil {
		return err
	}
	if st.found {
		_, err = tx.ExecContext(ctx, d.Render("UPDATE {derived} SET trusted = 1 WHERE table_name = ? AND structure = ?", names), table, structure)
		return err
	}
	_, err = tx.ExecContext(ctx, d.Render("INSERT INTO {derived} (table_name, structure, trusted, since) VALUES (?, ?, 1, ?)", names), table, structure, since)
	return err
}

// Untrusted returns the structures of the registered tables that are not
// trusted, by table.
func (d *DB) Untrusted(ctx context.Context) (map[*Table][]Structure, error) {
	out := map[*Table][]Structure{}
	for _, t := range d.Tables() {
		for _, s := range t.Structures() {
			st, err := d.structureState(ctx, EntTx{d.write}, t.Name, s.Name())
			if err != nil {
				return nil, err
			}
			if !st.trusted {
				out[t] = append(out[t], s)
			}
		}
	}
	return out, nil
}

// Check checks every structure of every registered table against its
// table, for tests and the crash test.
func (d *DB) Check(ctx context.Context) error {
	for _, t := range d.Tables() {
		for _, s := range t.Structures() {
			if err := s.Check(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Maintenance says how a replica keeps up the database in the background.
type Maintenance struct {
	Version string        // the binary's version, recorded with the replica
	Every   time.Duration // between heartbeats; 0: heartbeatEvery
	// AuditRetention is how long audit entries are kept (0: for ever), and
	// ChangesRetention how long the change feed keeps what it may drop.
	AuditRetention, ChangesRetention time.Duration
}

// pruneEvery is how often a replica prunes the audit trail and the change
// feed (a small batch at a time). Retentions are counted in days, and a
// round reads every entry of the feed that is older than its retention
// (each record's latest is kept for ever, so after a while that is most
// of the feed), so rounds are hourly, not at every heartbeat.
const pruneEvery = time.Hour

// Start records this process as a running replica and starts its
// heartbeat, which also reads every structure's state again, rebuilds what
// is untrusted once the trust rule allows, numbers the change feed, and
// now and then prunes the audit trail and the feed. It runs until ctx ends
// or Close; the replica's row is removed then.
func (d *DB) Start(ctx context.Context, m Maintenance) error {
	if m.Every <= 0 {
		m.Every = heartbeatEvery
	}
	host, _ := os.Hostname()
	name := fmt.Sprintf("%s:%d", host, os.Getpid())
	now := time.Now().UnixMilli()
	names := Names{"replica": replicaTable}
	var id int
	err := d.InTx(ctx, func(tx Tx) error {
		// Replicas that stopped without saying so are forgotten after a day.
		old := time.Now().Add(-forgetAfter).UnixMilli()
		if _, err := tx.ExecContext(ctx, d.Render("DELETE FROM {replica} WHERE seen_at < ?", names), old); err != nil {
			return err
		}
		insert := "INSERT INTO {replica} (name, version, schema_version, started_at, seen_at) VALUES (?, ?, ?, ?, ?)"
		args := []any{name, m.Version, LatestSchema(), now, now}
		if d.Postgres() {
			ids, err := queryInts(ctx, tx, d.Render(insert+" RETURNING id", names), args...)
			if err == nil && len(ids) == 1 {
				id = ids[0]
			}
			return err
		}
		res, err := tx.ExecContext(ctx, d.Render(insert, names), args...)
		if err != nil {
			return err
		}
		last, err := res.LastInsertId()
		id = int(last)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording this replica: %w", err)
	}
	if err := d.refreshTrust(ctx); err != nil {
		return err
	}
	loop, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	d.stopMaintenance = func() {
		stop()
		<-done
		end, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = d.write.ExecContext(end, d.Render("DELETE FROM {replica} WHERE id = ?", names), id)
	}
	go func() {
		defer close(done)
		var pruned time.Time
		beat := func() {
			d.maintain(loop, id)
			if time.Since(pruned) >= pruneEvery {
				pruned = time.Now()
				d.prune(loop, m)
			}
		}
		beat()
		tick := time.NewTicker(m.Every)
		defer tick.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				beat()
			}
		}
	}()
	return nil
}

// prune prunes the audit trail and the change feed as m says, logging
// what it could not do; while another replica prunes, it leaves the round
// to it.
func (d *DB) prune(ctx context.Context, m Maintenance) {
	if m.AuditRetention <= 0 && m.ChangesRetention <= 0 {
		return
	}
	release, ok, err := d.tryLock(ctx, "prune")
	if err != nil || !ok {
		return
	}
	defer release()
	if m.AuditRetention > 0 {
		if n, err := d.PruneAudit(ctx, m.AuditRetention); err != nil && ctx.Err() == nil {
			slog.Warn("pruning the audit trail", "error", err)
		} else if n > 0 {
			slog.Info("pruned the audit trail", "entries", n)
		}
	}
	if m.ChangesRetention > 0 {
		if n, err := d.PruneChanges(ctx, m.ChangesRetention); err != nil && ctx.Err() == nil {
			slog.Warn("pruning the change feed", "error", err)
		} else if n > 0 {
			slog.Info("pruned the change feed", "entries", n)
		}
	}
}

// maintain is one heartbeat: the replica's row, every structure's state,
// and a rebuild of what the trust rule allows.
func (d *DB) maintain(ctx context.Context, id int) {
	q := d.Render("UPDATE {replica} SET seen_at = ? WHERE id = ?", Names{"replica": replicaTable})
	if _, err := d.write.ExecContext(ctx, q, time.Now().UnixMilli(), id); err != nil && ctx.Err() == nil {
		slog.Warn("recording the heartbeat of this replica", "error", err)
		return
	}
	if err := d.refreshTrust(ctx); err != nil && ctx.Err() == nil {
		slog.Warn("reading the state of the derived structures", "error", err)
		return
	}
	if err := d.Sequence(ctx); err != nil && ctx.Err() == nil {
		slog.Warn("numbering the change feed", "error", err)
	}
	untrusted, err := d.Untrusted(ctx)
	if err != nil || len(untrusted) == 0 {
		return
	}
	release, ok, err := d.tryLock(ctx, "rebuild")
	if err != nil || !ok {
		return // another replica rebuilds
	}
	defer release()
	for t, ss := range untrusted {
		for _, s := range ss {
			if _, err := d.Rebuild(ctx, t, s); err != nil && ctx.Err() == nil {
				var older *OlderReplicasError
				if errors.As(err, &older) {
					slog.Info("not using "+s.Name()+" of "+t.Name+" yet", "why", err.Error())
				} else {
					slog.Warn("rebuilding", "table", t.Name, "structure", s.Name(), "error", err)
				}
				return
			}
		}
	}
}

// Reindex rebuilds, now, every structure of the registered tables that is
// not trusted (every one, with all), and trusts them; report, if set, is
// told of each structure before it is rebuilt or kept as it is; only, if
// set, picks the structures to consider. It stops
// at the first structure the trust rule does not let it rebuild (an
// *OlderReplicasError names the replicas in the way).
func (d *DB) Reindex(ctx context.Context, all bool, only func(Structure) bool, report func(t *Table, s Structure, rebuild bool)) error {
	release, ok, err := d.tryLock(ctx, "rebuild")
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("another replica is rebuilding a structure now; try again when it has finished")
	}
	defer release()
	for _, t := range d.Tables() {
		for _, s := range t.Structures() {
			if only != nil && !only(s) {
				continue
			}
			st, err := d.structureState(ctx, EntTx{d.write}, t.Name, s.Name())
			if err != nil {
				return err
			}
			rebuild := all || !st.trusted
			if report != nil {
				report(t, s, rebuild)
			}
			if !rebuild {
				continue
			}
			if _, err := d.Rebuild(ctx, t, s); err != nil {
				return err
			}
		}
	}
	return nil
}
