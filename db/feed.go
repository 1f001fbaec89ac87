package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"personnel/record"
)

// The change feed of a resource table: what a system that mirrors the
// table reads to keep in step, in the order the changes committed, never
// skipping one.
//
//	personnel_change (id, seq, table_name, record_id, deleted, at)
//
// The feed keeper writes an entry for every record a write changes, in the
// write's transaction (deleted for a delete, an upsert otherwise), with no
// seq. Numbering the entries at insert would give the classic gap: a
// transaction that took number 10 may commit after one that took 11, and
// a consumer that has read 11 never sees 10. So entries are numbered
// after they commit, by the sequencer: one at a time across replicas (a
// lock), it numbers, in one transaction, the committed entries that have
// no number yet, above the highest number given. An entry becomes
// readable only with its number, and every number a sequencer gives is
// higher than every number visible before it ran: a consumer that read up
// to seq n and asks for what follows n misses nothing.
//
// Entries a later entry of the same record supersedes, and deletions,
// are pruned after PERSONNEL_CHANGES_RETENTION; the latest upsert of a
// record that exists is kept for ever, so a consumer that starts from
// nothing still gets every record. A deletion pruned moves the table's
// horizon (personnel_feed_horizon) past it: a cursor before the horizon
// may have missed it, and is refused (ErrCursorGone).
//
// The feed is a structure like the others: its entries are whole once
// every record has one. When it is added to a table that holds records
// (an upgrade) it is rebuilt (an upsert of every record without an entry)
// before it answers.

// FeedStructure names the change feed among a table's structures.
const FeedStructure = "feed"

// FeedTable holds the entries of every table's change feed.
const FeedTable = "personnel_change"

// FeedHorizonTable holds, per table, the last entry pruned that a cursor
// must not be older than.
const FeedHorizonTable = "personnel_feed_horizon"

var feedColumns = []string{"table_name", "record_id", "deleted", "at"}

// feedKeeper writes the entries of every write of a table.
type feedKeeper struct {
	t     *Table
	names Names
}

func newFeedKeeper(t *Table) *feedKeeper {
	return &feedKeeper{t: t, names: Names{"change": FeedTable, "horizon": FeedHorizonTable, "table": t.Name}}
}

// Name implements Structure.
func (k *feedKeeper) Name() string { return FeedStructure }

// Inserted writes an upsert of each record.
func (k *feedKeeper) Inserted(ctx context.Context, w *Write, rows []record.Row) error {
	return k.write(ctx, w, ids(rows), false)
}

// Updated writes an upsert of each record.
func (k *feedKeeper) Updated(ctx context.Context, w *Write, changes []Change) error {
	list := make([]int, len(changes))
	for i, c := range changes {
		list[i] = c.After.ID
	}
	return k.write(ctx, w, list, false)
}

// Deleting writes a deletion of each record.
func (k *feedKeeper) Deleting(ctx context.Context, w *Write, rows []record.Row) error {
	return k.write(ctx, w, ids(rows), true)
}

func ids(rows []record.Row) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func (k *feedKeeper) write(ctx context.Context, w *Write, records []int, deleted bool) error {
	if len(records) == 0 {
		return nil
	}
	at := time.Now().UnixMilli()
	if c, ok := w.Tx.(bulkInserter); ok {
		rows := make([][]any, len(records))
		for i, id := range records {
			rows[i] = []any{k.t.Name, int64(id), deleted, at}
		}
		_, err := c.CopyFrom(ctx, FeedTable, feedColumns, rows)
		return err
	}
	names := Names{"change": FeedTable}
	for i, c := range feedColumns {
		names["c"+strconv.Itoa(i)] = c
	}
	for start := 0; start < len(records); start += auditBatch {
		part := records[start:min(start+auditBatch, len(records))]
		args := make([]any, 0, 4*len(part))
		for _, id := range part {
			args = append(args, k.t.Name, int64(id), deleted, at)
		}
		query := k.t.db.Render("INSERT INTO {change} ("+columnMarks(len(feedColumns))+") VALUES "+Tuples(len(part), len(feedColumns)), names)
		if err := execLater(ctx, w.Tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// Rebuild writes an upsert of every record that has no entry, a batch per
// transaction (each record locked, so a delete waits or is seen).
func (k *feedKeeper) Rebuild(ctx context.Context) (int, error) {
	d := k.t.db
	sel := d.Render(`SELECT r.id FROM {table} AS r WHERE r.id > ?
AND NOT EXISTS (SELECT 1 FROM {change} AS c WHERE c.table_name = ? AND c.record_id = r.id)
ORDER BY r.id LIMIT ?`+d.Locks().Share, k.names)
	total, after := 0, 0
	for {
		var list []int
		err := d.InTx(ctx, func(tx Tx) error {
			var err error
			if list, err = queryInts(ctx, tx, sel, after, k.t.Name, rebuildBatch); err != nil || len(list) == 0 {
				return err
			}
			// The records are locked, but InnoDB read the feed in the
			// statement's snapshot: entries committed since (a concurrent
			// write's, a delete's) are read again, locked, and their
			// records left alone.
			args := []any{k.t.Name}
			for _, id := range list {
				args = append(args, id)
			}
			seen, err := queryInts(ctx, tx, d.Render("SELECT record_id FROM {change} WHERE table_name = ? AND record_id IN ("+Marks(len(list))+")"+d.Locks().Share, k.names), args...)
			if err != nil {
				return err
			}
			missing := slices.DeleteFunc(slices.Clone(list), func(id int) bool { return slices.Contains(seen, id) })
			if len(missing) == 0 {
				return nil
			}
			return k.write(ctx, k.t.newWrite(tx, false), missing, false)
		})
		if err != nil || len(list) == 0 {
			return total, err
		}
		total += len(list)
		after = list[len(list)-1]
	}
}

// Check compares the feed with its table: every record has an entry whose
// latest says it exists, and every record whose latest entry says so
// exists.
func (k *feedKeeper) Check(ctx context.Context) error {
	d := k.t.db
	live := map[int]bool{}
	if err := queryRows(ctx, d.Reader(), d.Render("SELECT id FROM {table}", k.names), func(scan func(dest ...any) error) error {
		var id int
		err := scan(&id)
		live[id] = true
		return err
	}); err != nil {
		return err
	}
	latest := map[int]bool{} // record: exists according to its latest entry
	err := queryRows(ctx, d.Reader(), d.Render("SELECT record_id, deleted FROM {change} WHERE table_name = ? ORDER BY id", k.names),
		func(scan func(dest ...any) error) error {
			var id int
			var deleted bool
			err := scan(&id, &deleted)
			latest[id] = !deleted
			return err
		}, k.t.Name)
	if err != nil {
		return err
	}
	for id := range live {
		if !latest[id] {
			return fmt.Errorf("feed of %s: record %d has no entry, or its latest is a deletion", k.t.Name, id)
		}
	}
	for id, exists := range latest {
		if exists && !live[id] {
			return fmt.Errorf("feed of %s: the latest entry of record %d says it exists, and it does not", k.t.Name, id)
		}
	}
	return nil
}

// ErrCursorGone is the answer to a feed read from a cursor older than
// what the feed keeps.
var ErrCursorGone = errors.New("db: the feed no longer holds what follows this cursor")

// FeedEntry is one change read from a feed.
type FeedEntry struct {
	Seq      int64
	RecordID int
	Deleted  bool
}

// Changes returns up to limit entries of the table's feed that follow
// after, in order, and whether more follow. Entries committed but not
// numbered yet are numbered first. With fromCursor, after is where a
// consumer left off, and one before the table's horizon (it may have
// missed a deletion since pruned) is ErrCursorGone; without, the read
// starts from the beginning of what is kept.
func (t *Table) Changes(ctx context.Context, after int64, fromCursor bool, limit int) ([]FeedEntry, bool, error) {
	d := t.db
	if err := d.Sequence(ctx); err != nil {
		return nil, false, err
	}
	if fromCursor {
		var horizon int64
		err := scanOne(d.Reader().Query(ctx, d.Render("SELECT COALESCE(MAX(seq), 0) FROM {horizon} WHERE table_name = ?", Names{"horizon": FeedHorizonTable}), t.Name))(&horizon)
		if err != nil {
			return nil, false, err
		}
		if after < horizon {
			return nil, false, ErrCursorGone
		}
	}
	var out []FeedEntry
	err := queryRows(ctx, d.Reader(), d.feedPageQuery(), func(scan func(dest ...any) error) error {
		var e FeedEntry
		err := scan(&e.Seq, &e.RecordID, &e.Deleted)
		out = append(out, e)
		return err
	}, t.Name, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// feedPageQuery reads a page of a table's feed: the entries that follow a
// cursor, in order. Its arguments: the table, the cursor, how many.
func (d *DB) feedPageQuery() string {
	return d.Render("SELECT seq, record_id, deleted FROM {change}"+d.feedPageHint()+" WHERE table_name = ? AND seq > ? ORDER BY seq LIMIT ?", Names{"change": FeedTable})
}

// feedPageIndex is the index of the feed's entries by table and number
// (db/migrations), the one a page of a table's feed is read from.
const feedPageIndex = "change_table_name_seq"

// feedPageHint names the index a page of the feed must be read from, on
// MySQL and MariaDB. Left to itself, MariaDB reads the page by the
// table's name alone (ref access on the first column of the index, the
// number only filtered): with one table in the feed, it walks every entry
// before the cursor, half the index on average, to return 100. Forced to
// the index, it reads the range (table, number) from the cursor on.
func (d *DB) feedPageHint() string {
	if d.MySQL() {
		return " FORCE INDEX (" + feedPageIndex + ")"
	}
	return ""
}

// FeedEnd returns the number of the table's last numbered change: a
// cursor that a consumer who reads the table now may follow the feed
// from, missing nothing.
func (t *Table) FeedEnd(ctx context.Context) (int64, error) {
	var end int64
	q := t.db.Render("SELECT COALESCE(MAX(seq), 0) FROM {change} WHERE table_name = ?", Names{"change": FeedTable})
	err := scanOne(t.db.Reader().Query(ctx, q, t.Name))(&end)
	return end, err
}

// sequenceBatch is how many entries one transaction of the sequencer
// numbers: a bulk load leaves as many unnumbered entries as it wrote
// records, which the first read of the feed numbers.
const sequenceBatch = 5000

// Sequence numbers the committed entries that have no number yet (see
// the top of this file). One replica at a time does it; when another is
// doing it, Sequence waits for it briefly, since what it numbers is what
// the caller is after.
func (d *DB) Sequence(ctx context.Context) error {
	names := Names{"change": FeedTable}
	var waiting int
	if err := scanOne(d.Reader().Query(ctx, d.Render("SELECT COUNT(*) FROM (SELECT 1 AS one FROM {change} WHERE seq IS NULL LIMIT 1) AS p", names)))(&waiting); err != nil || waiting == 0 {
		return err
	}
	release, err := d.lock(ctx, "feed", 2*time.Second)
	if err != nil {
		return err
	}
	defer release()
	maxSeq := d.Render("SELECT COALESCE(MAX(seq), 0) FROM {change}", names)
	pending := d.Render("SELECT id FROM {change} WHERE seq IS NULL ORDER BY id LIMIT ?", names)
	for {
		var n int
		err := d.InTx(ctx, func(tx Tx) error {
			var top int64
			if err := scanOne(tx.Query(ctx, maxSeq))(&top); err != nil {
				return err
			}
			list, err := queryInts(ctx, tx, pending, sequenceBatch)
			if err != nil || len(list) == 0 {
				n = 0
				return err
			}
			n = len(list)
			// Numbers follow the ids (the order the entries were written
			// in), after every number given before: id + (top + 1 - the
			// first id). They need not be consecutive, only increasing.
			args := make([]any, 0, n+1)
			args = append(args, top+1-int64(list[0]))
			for _, id := range list {
				args = append(args, id)
			}
			_, err = tx.ExecContext(ctx, d.Render("UPDATE {change} SET seq = id + ? WHERE id IN ("+Marks(n)+")", names), args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("numbering the change feed: %w", err)
		}
		if n < sequenceBatch {
			return nil
		}
	}
}

// feedPruning is where this replica's pruning of the feed has got to, so
// that a round reads what was numbered since the one before, not the
// whole feed: at a million entries a whole read took seconds each round.
// It is the replica's own: replicas prune in turn (a lock), and each
// starts with a round over everything old enough, so marks never need to
// agree between them.
type feedPruning struct {
	mu sync.Mutex
	// begun is set by the first round.
	begun bool
	// aged: every entry numbered up to aged was older than a round's
	// retention and read by it, so is pruned or was then the latest of its
	// record (an upsert kept for consumers that start from nothing).
	aged int64
	// seen is the highest number a round has read for what it supersedes.
	seen int64
}

// PruneChanges deletes the feed's entries older than retention that a
// later entry of the same record supersedes, and its deletions older than
// retention, moving each table's horizon past them; a batch per
// transaction. It returns how many entries it deleted.
//
// A round reads two stretches of the feed, both in number order: the
// entries numbered since the last round, whose records' kept entries
// behind aged they supersede; then the entries after aged, as long as
// they are older than retention. Numbers follow commits (the sequencer),
// and an entry is written at most a write's deadline before it commits,
// which retention (a day at least) far exceeds, so an entry numbered
// after a round's first stretch is not old enough for its second.
func (d *DB) PruneChanges(ctx context.Context, retention time.Duration) (int, error) {
	p := &d.feedPruning
	p.mu.Lock()
	defer p.mu.Unlock()
	before := time.Now().Add(-retention).UnixMilli()
	names := Names{"change": FeedTable}
	total := 0
	if !p.begun {
		// The first round reads every entry old enough, superseded or not.
		if err := scanOne(d.Reader().Query(ctx, d.Render("SELECT COALESCE(MAX(seq), 0) FROM {change}", names)))(&p.seen); err != nil {
			return 0, err
		}
		p.begun = true
	} else {
		n, err := d.pruneSuperseded(ctx)
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := d.pruneAged(ctx, before)
	return total + n, err
}

// pruneSuperseded deletes the kept entries behind aged whose records have
// an entry numbered since the last round, and moves seen past those.
func (d *DB) pruneSuperseded(ctx context.Context) (int, error) {
	p := &d.feedPruning
	names := Names{"change": FeedTable}
	since := d.Render("SELECT seq, table_name, record_id FROM {change} WHERE seq > ? ORDER BY seq LIMIT ?", names)
	total := 0
	for {
		records := map[string][]any{}
		var last int64
		var read int
		err := queryRows(ctx, d.Reader(), since, func(scan func(dest ...any) error) error {
			var table string
			var record int64
			if err := scan(&last, &table, &record); err != nil {
				return err
			}
			records[table] = append(records[table], record)
			read++
			return nil
		}, p.seen, pruneBatch)
		if err != nil || read == 0 {
			return total, err
		}
		var list []int
		for table, ids := range records {
			q := d.Render("SELECT id FROM {change} WHERE table_name = ? AND record_id IN ("+Marks(len(ids))+") AND seq <= ?", names)
			old, err := queryInts(ctx, d.Reader(), q, append(append([]any{table}, ids...), p.aged)...)
			if err != nil {
				return total, err
			}
			list = append(list, old...)
		}
		if len(list) > 0 {
			if err := d.deleteChanges(ctx, list, nil); err != nil {
				return total, err
			}
			total += len(list)
		}
		p.seen = last
		if read < pruneBatch {
			return total, nil
		}
	}
}

// pruneAged reads the entries after aged in number order up to the first
// one newer than before or numbered after seen: it deletes the deletions and the superseded
// entries among them, and moves aged past them.
func (d *DB) pruneAged(ctx context.Context, before int64) (int, error) {
	p := &d.feedPruning
	names := Names{"change": FeedTable}
	next := d.Render("SELECT id, seq, table_name, deleted, at FROM {change} WHERE seq > ? ORDER BY seq LIMIT ?", names)
	total := 0
	for {
		var old []any // ids of the upserts old enough, to ask which are superseded
		var list []int
		horizon := map[string]int64{}
		aged, read, newer := p.aged, 0, false
		err := queryRows(ctx, d.Reader(), next, func(scan func(dest ...any) error) error {
			var id int
			var seq, at int64
			var table string
			var deleted bool
			if err := scan(&id, &seq, &table, &deleted, &at); err != nil {
				return err
			}
			read++
			// Past seen, an entry may supersede kept entries behind aged
			// that the next round's first stretch would not see again.
			if newer || at >= before || seq > p.seen {
				newer = true
				return nil
			}
			aged = seq
			if deleted {
				list = append(list, id)
				horizon[table] = max(horizon[table], seq)
			} else {
				old = append(old, id)
			}
			return nil
		}, p.aged, pruneBatch)
		if err != nil {
			return total, err
		}
		if len(old) > 0 {
			q := d.Render(`SELECT c.id FROM {change} AS c WHERE c.id IN (`+Marks(len(old))+`) AND EXISTS (
  SELECT 1 FROM {change} AS l WHERE l.table_name = c.table_name AND l.record_id = c.record_id AND l.seq > c.seq)`, names)
			superseded, err := queryInts(ctx, d.Reader(), q, old...)
			if err != nil {
				return total, err
			}
			list = append(list, superseded...)
		}
		if len(list) > 0 {
			if err := d.deleteChanges(ctx, list, horizon); err != nil {
				return total, err
			}
			total += len(list)
		}
		p.aged = aged
		if newer || read < pruneBatch {
			return total, nil
		}
	}
}

// deleteChanges deletes the entries list and moves the horizons of
// horizon, in one transaction.
func (d *DB) deleteChanges(ctx context.Context, list []int, horizon map[string]int64) error {
	names := Names{"change": FeedTable, "horizon": FeedHorizonTable}
	args := make([]any, len(list))
	for i, id := range list {
		args[i] = id
	}
	return d.InTx(ctx, func(tx Tx) error {
		for table, seq := range horizon {
			res, err := tx.ExecContext(ctx, d.Render("UPDATE {horizon} SET seq = ? WHERE table_name = ? AND seq < ?", names), seq, table, seq)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err == nil && n == 0 {
				var have int
				if err := scanOne(tx.Query(ctx, d.Render("SELECT COUNT(*) FROM {horizon} WHERE table_name = ?", names), table))(&have); err != nil {
					return err
				}
				if have == 0 {
					if _, err := tx.ExecContext(ctx, d.Render("INSERT INTO {horizon} (table_name, seq) VALUES (?, ?)", names), table, seq); err != nil {
						return err
					}
				}
			}
		}
		_, err := tx.ExecContext(ctx, d.Render("DELETE FROM {change} WHERE id IN ("+Marks(len(list))+")", names), args...)
		return err
	})
}

// feedWatch wakes the readers of feeds waiting for a change. While anyone
// waits, a poll numbers what was committed (on any replica) and reads the
// end of each table's feed; when one moves, every waiter wakes and checks
// its own table. Nobody holds a connection while waiting.
type feedWatch struct {
	mu      sync.Mutex
	ends    map[string]int64 // the last end read of each table's feed
	wake    chan struct{}    // closed (and replaced) when an end moves
	waiters int
	polling bool
}

// pollEvery is how often a replica with waiting readers numbers what was
// committed and reads the ends of the feeds.
const pollEvery = 200 * time.Millisecond

// WaitForChange waits until the feed of the table has an entry after
// after, or until timeout or ctx ends, and reports whether it has.
func (t *Table) WaitForChange(ctx context.Context, after int64, timeout time.Duration) bool {
	d, w := t.db, &t.db.feed
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		if w.ends[t.Name] > after {
			w.mu.Unlock()
			return true
		}
		if w.wake == nil {
			w.wake = make(chan struct{})
		}
		wake := w.wake
		w.waiters++
		if !w.polling {
			w.polling = true
			go d.pollFeeds()
		}
		w.mu.Unlock()
		var woken bool
		select {
		case <-wake:
			woken = true
		case <-timer.C:
		case <-ctx.Done():
		}
		w.mu.Lock()
		w.waiters--
		w.mu.Unlock()
		if !woken {
			return false
		}
	}
}

// pollFeeds runs while anyone waits (see feedWatch).
func (d *DB) pollFeeds() {
	w := &d.feed
	for {
		w.mu.Lock()
		if w.waiters == 0 || d.closed.Load() {
			w.polling = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.Sequence(ctx)
		moved := false
		for _, t := range d.Tables() {
			end, err := t.FeedEnd(ctx)
			if err != nil {
				continue
			}
			w.mu.Lock()
			if w.ends == nil {
				w.ends = map[string]int64{}
			}
			if end > w.ends[t.Name] {
				w.ends[t.Name], moved = end, true
			}
			w.mu.Unlock()
		}
		cancel()
		if moved {
			w.mu.Lock()
			if w.wake != nil {
				close(w.wake)
				w.wake = nil
			}
			w.mu.Unlock()
		}
		time.Sleep(pollEvery)
	}
}
