package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"personnel/db"
)

// hangGuard is how long a test waits for something that should happen
// soon before failing instead of hanging; it measures nothing.
const hangGuard = 30 * time.Second

// addReplica records a replica behind the service's back, as one built
// for schema would record itself, last seen at seen.
func addReplica(a *api, name string, schema int, seen time.Time) {
	a.exec(a.db.SQL().Raw("INSERT INTO personnel_replica (name, version, schema_version, started_at, seen_at) VALUES (").
		Arg(name).Raw(", ").Arg("0.9").Raw(", ").Arg(schema).Raw(", ").Arg(seen.Add(-time.Minute).UnixMilli()).Raw(", ").
		Arg(seen.UnixMilli()).Raw(")"))
}

// untrust marks the closure of r as a structure the last migration step
// created beside records already there: untrusted, since the latest schema.
func untrust(a *api, r res) {
	a.exec(a.db.SQL().Raw("UPDATE personnel_derived SET trusted = 0, since = ").Arg(db.LatestSchema()).
		Raw(" WHERE table_name = ").Arg(r.Table).Raw(" AND structure = ").Arg(db.ClosureStructure))
}

// While a replica built for an earlier schema is live, it may write the
// table without keeping a structure the later schema added: reindex
// refuses to rebuild (and so to trust) it, naming that replica, and a
// replica of the same schema is not in the way. Once the older one has
// stopped (no heartbeat for long enough), the reindex goes through.
func TestReindex_RefusesWhileAnOlderReplicaIsLiveNamingIt(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		top := a.create(r, "TOP", "t", nil)
		a.create(r, "LOW", "l", top)
		untrust(a, r)
		addReplica(a, "peer:1", db.LatestSchema(), time.Now())
		addReplica(a, "old-host:42", db.LatestSchema()-1, time.Now())
		b := a.replica(t)
		err := b.db.Reindex(ctx, false, nil, nil)
		var older *db.OlderReplicasError
		if !errors.As(err, &older) || !strings.Contains(err.Error(), "old-host:42") || strings.Contains(err.Error(), "peer:1") {
			t.Fatalf("reindex with an older replica live: %v; want a refusal naming old-host:42 alone", err)
		}
		if b.db.Trusted(ctx, r.Table, db.ClosureStructure) {
			t.Fatal("the closure is trusted after a refused reindex")
		}
		a.exec(a.db.SQL().Raw("UPDATE personnel_replica SET seen_at = ").Arg(time.Now().Add(-time.Hour).UnixMilli()).
			Raw(" WHERE name = ").Arg("old-host:42"))
		if err := b.db.Reindex(ctx, false, nil, nil); err != nil {
			t.Fatalf("reindex once the older replica stopped: %v", err)
		}
		if !b.db.Trusted(ctx, r.Table, db.ClosureStructure) {
			t.Fatal("the closure is not trusted after the reindex")
		}
	})
}

// A running replica rebuilds an untrusted structure by itself, with no
// operator, but only once no older replica is live: until then it keeps
// answering from the table.
func TestTrust_AReplicaRebuildsWhatIsUntrustedOnceNoOlderReplicaIsLive(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		top := a.create(r, "TOP", "t", nil)
		low := a.create(r, "LOW", "l", top)
		untrust(a, r)
		// The older replica wrote behind this one's back meanwhile.
		a.exec(a.db.SQL().Raw("DELETE FROM ").Ident(db.ClosureTable(r.Table)).Raw(" WHERE descendant = ").Arg(low))
		addReplica(a, "old-host:42", db.LatestSchema()-1, time.Now())
		b := a.replica(t)
		if err := b.db.Start(ctx, db.Maintenance{Version: "test", Every: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // many heartbeats, none of which may rebuild
		if b.db.Trusted(ctx, r.Table, db.ClosureStructure) {
			t.Fatal("the closure was trusted while an older replica was live")
		}
		if lb := b.list(r, ""); lb.Count != 2 {
			t.Fatalf("list count %d, want 2", lb.Count)
		}
		a.exec(a.db.SQL().Raw("UPDATE personnel_replica SET seen_at = ").Arg(time.Now().Add(-time.Hour).UnixMilli()).
			Raw(" WHERE name = ").Arg("old-host:42"))
		for deadline := time.Now().Add(hangGuard); !b.db.Trusted(ctx, r.Table, db.ClosureStructure); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the closure was not rebuilt once the older replica stopped")
			}
		}
		if err := b.db.Check(ctx); err != nil {
			t.Fatalf("after the rebuild: %v", err)
		}
	})
}

// Every replica records its version, the schema it was built for and a
// heartbeat, and removes its record when it stops; a start changes no
// structure's state (trusted stays trusted for the replicas using it).
func TestTrust_EveryReplicaRecordsItselfAndAStartUntrustsNothing(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		a.create(r, "ONE", "o", nil)
		states := func() string {
			var b strings.Builder
			rows, err := a.db.Reader().Query(ctx, "SELECT table_name, structure, trusted FROM personnel_derived ORDER BY table_name, structure")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var table, structure string
				var trusted int
				if err := rows.Scan(&table, &structure, &trusted); err != nil {
					t.Fatal(err)
				}
				b.WriteString(table + " " + structure + " " + strings.Repeat("trusted", trusted) + "\n")
			}
			return b.String()
		}
		before := states()
		b := a.replica(t)
		if err := b.db.Start(ctx, db.Maintenance{Version: "v-test", Every: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if after := states(); after != before {
			t.Fatalf("a start changed the structures' states:\n%s\nto\n%s", before, after)
		}
		seen := func() (n int, last int64) {
			rows, err := a.db.Reader().Query(ctx, a.db.SQL().Raw("SELECT seen_at FROM personnel_replica WHERE version = ").Param().Raw(" AND schema_version = ").Param().String(),
				"v-test", db.LatestSchema())
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				n++
				rows.Scan(&last)
			}
			return n, last
		}
		n, first := seen()
		if n != 1 {
			t.Fatalf("%d rows record the replica, want 1", n)
		}
		for deadline := time.Now().Add(hangGuard); ; time.Sleep(5 * time.Millisecond) {
			if _, last := seen(); last > first {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no heartbeat")
			}
		}
		b.db.Close()
		if n, _ := seen(); n != 0 {
			t.Fatalf("%d rows record the replica after it stopped, want 0", n)
		}
	})
}
