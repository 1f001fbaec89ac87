package seed_test

import (
	"context"
	"regexp"
	"testing"
	"unicode"

	"personnel/db/dbtest"
	"personnel/seed"
	"personnel/server"
)

func TestLevelSizes_AddUpWithinSixLevels(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, 10000, 123457, 1000000} {
		sizes := seed.LevelSizes(n)
		sum := 0
		for _, s := range sizes {
			if s < 1 {
				t.Fatalf("count %d: empty level in %v", n, sizes)
			}
			sum += s
		}
		if sum != n || len(sizes) > seed.Levels {
			t.Errorf("count %d: levels %v (sum %d)", n, sizes, sum)
		}
		if n >= 10000 && len(sizes) != seed.Levels {
			t.Errorf("count %d: %d levels, want %d", n, len(sizes), seed.Levels)
		}
	}
}

func TestFill_ARealisticForestThroughTheStore(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			l := server.Loaders(d)["department"]
			var calls, last int
			err := seed.Fill(context.Background(), l, seed.Options{Count: 3000, Seed: 7, Batch: 700,
				Progress: func(done, total int) { calls++; last = done }})
			if err != nil {
				t.Fatal(err)
			}
			if calls < 5 || last != 3000 {
				t.Errorf("progress called %d times, last %d", calls, last)
			}
			rows, err := d.Read().Department.Query().All(context.Background())
			if err != nil || len(rows) != 3000 {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
			parent := map[int]*int{}
			names := map[string]int{}
			scripts := map[string]bool{}
			for _, r := range rows {
				parent[r.ID] = r.ParentID
				names[r.Name]++
				if !regexp.MustCompile(`^D\d{6}$`).MatchString(r.Code) {
					t.Fatalf("code %q", r.Code)
				}
				for _, ru := range r.Name {
					for name, table := range map[string]*unicode.RangeTable{"Cyrillic": unicode.Cyrillic, "Greek": unicode.Greek, "Han": unicode.Han, "Arabic": unicode.Arabic} {
						if unicode.Is(table, ru) {
							scripts[name] = true
						}
					}
				}
			}
			deepest := 0
			for id := range parent {
				depth := 1
				for p := parent[id]; p != nil; p = parent[*p] {
					if _, ok := parent[*p]; !ok {
						t.Fatalf("record %d has a parent %d that does not exist", id, *p)
					}
					depth++
				}
				deepest = max(deepest, depth)
			}
			dups := 0
			for _, n := range names {
				if n > 1 {
					dups++
				}
			}
			if deepest != seed.Levels || len(scripts) != 4 || dups == 0 {
				t.Errorf("deepest level %d, scripts %v, repeated names %d", deepest, scripts, dups)
			}
			if err := seed.Fill(context.Background(), l, seed.Options{Count: 10}); err == nil {
				t.Error("seeding a resource that has records was allowed")
			}
		})
	}
}
