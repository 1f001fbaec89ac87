package resource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/record"
)

// pieces are what the names of the equivalence test are made of: letters
// whose folding changes their length or looks alike (ß, ﬁ, İ, the Kelvin
// sign, final sigma), several scripts, LIKE's wildcards and escape
// characters, quotes, and words with repeated substrings.
var pieces = []string{
	"a", "b", "n", "A", "ä", "Ä", "ö", "ß", "ẞ", "ﬁ", "İ", "ı", "K", "σ", "Σ", "ς", "д", "Д", "Ж", "営", "業", "部", "東京",
	"ع", "م", "%", "_", `\`, "!", `"`, "'", " ", "-", "banana", "Bandana", "Ärzte", "Straße", "ΣΊΣΥΦΟΣ", "отдел", "総務部",
	"محاسبة", "aaaaaaaa", "abab", "Köln",
}

// randomText joins up to n pieces, within limit characters.
func randomText(rng *rand.Rand, n, limit int) string {
	var b strings.Builder
	for range 1 + rng.IntN(n) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	r := []rune(strings.TrimSpace(b.String()))
	if len(r) == 0 {
		return "x"
	}
	return string(r[:min(len(r), limit)])
}

// term is a search: mostly a piece of a stored value (in another letter
// case now and then; often one or two characters), otherwise random; 1 to
// 20 characters.
func term(rng *rand.Rand, values []string) string {
	if len(values) > 0 && rng.IntN(4) > 0 {
		v := []rune(values[rng.IntN(len(values))])
		n := 1 + rng.IntN(min(20, len(v)))
		if rng.IntN(3) == 0 { // short searches find many records
			n = min(n, 1+rng.IntN(2))
		}
		start := rng.IntN(len(v) - n + 1)
		t := string(v[start : start+n])
		if rng.IntN(3) == 0 {
			t = strings.ToUpper(t)
		}
		return t
	}
	return randomText(rng, 4, 1+rng.IntN(20))
}

// Every way a list can find the records of a search (the planner's
// choice, a LIKE over the table, the substring index for the page and the
// count, the ids of the page from the index alone, a walk of so many
// records before either, a count known from the index) gives the same page and count as filtering every record in Go by
// its folded value, on every backend: in id order both ways, by name, with
// a second search, with a parent filter, below a record; on records made
// by create, bulk load and update, some deleted.
func TestSearch_EveryPlanGivesTheAnswerOfAFilterOverEveryRecord(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed %d", seed)
		}
	})
	descs, err := config.Resources()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			// The planner must have chosen each way at least once on each
			// backend, or the test no longer shows that its choices are
			// right. Counted over every resource: a small one (a flat
			// resource with two searched fields) may not reach every plan
			// with every seed.
			chose := map[string]int{}
			for _, desc := range descs {
				t.Run(desc.Name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(len(desc.Name))))
					r := newResource(desc, d, Options{PageSizeMax: 1000, Resources: descs})
					checkSearches(t, r, rng, fill(t, r, rng), chose)
				})
			}
			for _, way := range []string{"ids", "join", "walk, then the index", "like", "index count", "known count", "like count"} {
				if chose[way] == 0 {
					t.Errorf("the planner never chose %s in this test (%v): make the data or the searches vary more", way, chose)
				}
			}
		})
	}
}

// fill writes records through every write of the store: creates (under
// random parents), a bulk load, updates of searched fields, and deletes.
// Some names are long, the same for their first 20 characters and
// different after: it returns those 20.
func fill(t *testing.T, r *Resource, rng *rand.Rand) (long string) {
	t.Helper()
	for len([]rune(long)) < 20 {
		long += pieces[rng.IntN(len(pieces))]
	}
	long = string([]rune(long)[:20])
	ctx := context.Background()
	value := func(f *record.Field) record.Value {
		switch f.Kind {
		case record.KindText:
			return record.Value{Str: randomText(rng, 6, min(f.MaxLen, 60)), Valid: true}
		case record.KindChoice:
			return record.Value{Str: f.Choices[0], Valid: true}
		case record.KindInteger:
			n := int64(0)
			if f.Min != nil {
				n = *f.Min
			}
			return record.Value{Int: n, Valid: true}
		case record.KindBoolean:
			return record.Value{Int: 1, Valid: true}
		case record.KindDate:
			return record.Value{Str: "2024-02-29", Valid: true}
		}
		return record.Value{}
	}
	var ids []int
	for i := range 120 {
		in := Input{Given: make([]bool, len(r.fields.List)), Values: make([]record.Value, len(r.fields.List))}
		for k := range r.fields.List {
			f := &r.fields.List[k]
			switch {
			case k == r.fields.Code:
				in.Values[k] = record.Value{Str: fmt.Sprintf("K%d|%s", i, randomText(rng, 2, 10)), Valid: true}
			case k == r.fields.Parent:
				if len(ids) == 0 || rng.IntN(3) == 0 {
					continue
				}
				in.Values[k] = record.Value{Int: int64(ids[rng.IntN(len(ids))]), Valid: true}
			case k == r.fields.Name && i < 10:
				in.Values[k] = record.Value{Str: long + []string{"X1", "Y2"}[i%2], Valid: true}
			case f.Required || f.Kind == record.KindText && rng.IntN(4) > 0:
				in.Values[k] = value(f)
			default:
				continue
			}
			in.Given[k] = true
		}
		row, err := r.Create(ctx, in)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		ids = append(ids, row.ID)
	}
	var load []NewRecord
	for i := range 60 {
		load = append(load, NewRecord{Code: fmt.Sprintf("L%d|%s", i, randomText(rng, 2, 10)), Name: randomText(rng, 8, 100)})
	}
	if _, err := r.Load(ctx, load); err != nil {
		t.Fatalf("load: %v", err)
	}
	for range 40 {
		in := Input{Given: make([]bool, len(r.fields.List)), Values: make([]record.Value, len(r.fields.List))}
		for _, k := range searchedFields(r) {
			if k != r.fields.Code && rng.IntN(2) == 0 {
				in.Given[k], in.Values[k] = true, value(&r.fields.List[k])
			}
		}
		if _, err := r.Update(ctx, ids[rng.IntN(len(ids))], in, nil); err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	for range 15 {
		err := r.Delete(ctx, ids[rng.IntN(len(ids))], nil)
		var ae *apierror.Error
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("delete: %v", err) // a parent is refused (409), or gone already (404)
		}
	}
	if err := r.db.Check(ctx); err != nil {
		t.Fatal(err)
	}
	return long
}

// checkSearches lists searches of many shapes, each through every plan,
// and compares each answer with a filter over every record. long is what
// some names begin with (fill).
func checkSearches(t *testing.T, r *Resource, rng *rand.Rand, long string, chose map[string]int) {
	t.Helper()
	ctx := context.Background()
	all, err := r.List(ctx, Query{Page: 1, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	records := all.Rows
	values := map[int][]string{} // searched field: its values
	for _, i := range searchedFields(r) {
		for _, row := range records {
			if v := row.Values[i]; v.Valid && v.Str != "" {
				values[i] = append(values[i], v.Str)
			}
		}
	}
	// The character most values of a field hold: the broadest search.
	common := map[int]string{}
	for i, vs := range values {
		held := map[rune]int{}
		for _, v := range vs {
			for _, c := range casefold.Fold(v) {
				held[c]++
			}
		}
		best := 0
		for c, n := range held {
			if n > best || n == best && string(c) < common[i] {
				best, common[i] = n, string(c)
			}
		}
	}
	var roots []int
	for _, row := range records {
		if p := r.fields.Parent; p >= 0 && !row.Values[p].Valid {
			roots = append(roots, row.ID)
		}
	}
	name := r.fields.List[r.fields.Name].Key
	for range 100 {
		field := searchedFields(r)[rng.IntN(len(searchedFields(r)))]
		search := term(rng, values[field])
		switch rng.IntN(8) {
		case 0:
			search = common[field]
		case 1:
			// Longer than the index's grams, whose first characters find
			// names that do not hold it.
			field = r.fields.Name
			search = string([]rune(long)[20-db.SubstringK:]) + []string{"X", "Y"}[rng.IntN(2)]
		}
		params := url.Values{r.fields.List[field].Key + "_icontains": {search}}
		var below *int
		switch rng.IntN(6) {
		case 1:
			params.Set("ordering", "-id")
		case 2:
			params.Set("ordering", []string{name, "-" + name}[rng.IntN(2)])
		case 3:
			other := searchedFields(r)[rng.IntN(len(searchedFields(r)))]
			if other != field {
				params.Set(r.fields.List[other].Key+"_icontains", term(rng, values[other]))
			}
		case 4:
			if p := r.fields.Parent; p >= 0 {
				params.Set(r.fields.List[p].Key+"_isnull", "false")
			}
		case 5:
			if len(roots) > 0 {
				below = &roots[rng.IntN(len(roots))]
			}
		}
		for _, size := range []int{1 + rng.IntN(3), 10, 1000} {
			for _, page := range []string{"1", "2", "last"} {
				params.Set("page_size", fmt.Sprint(size))
				params.Set("page", page)
				q, err := r.ParseQuery(params)
				if err != nil {
					t.Fatal(err)
				}
				checkPlans(t, r, q, below, records, params.Encode(), chose)
			}
		}
	}
}

// checkPlans lists q (below the record below, if set) through every plan
// and compares each page with the answer of a filter over records.
func checkPlans(t *testing.T, r *Resource, q Query, below *int, records []record.Row, query string, chose map[string]int) {
	t.Helper()
	ctx := context.Background()
	var sc *scope
	within := records
	if below != nil {
		sc = &scope{with: r.tree(ctx).subtree, name: "subtree", args: []any{*below}}
		within = descendantsOf(r, records, *below)
	}
	want, wantCount, wantErr := expected(r, q, within)
	auto, err := r.filtered(ctx, q, sc)
	if err != nil {
		t.Fatal(err)
	}
	a := auto.(tableSource)
	switch {
	case a.walk > 0:
		chose["walk, then the index"]++
	case a.idsPage:
		chose["ids"]++
	case a.page.filter >= 0:
		chose["join"]++
	default:
		chose["like"]++
	}
	switch {
	case a.known >= 0:
		chose["known count"]++
	case a.tally.filter >= 0:
		chose["index count"]++
	default:
		chose["like count"]++
	}
	plans := map[string]source{"planner": auto, "like": r.listSource(q, sc)}
	for i, f := range q.Filters {
		s, ok := r.searchable(ctx, i, f)
		if !ok {
			continue
		}
		if err := r.countKept(ctx, &s, -1, &state{}, new(bool)); err != nil {
			t.Fatal(err)
		}
		joined := r.listSource(q, sc)
		joined.page, joined.tally = s.through, s.through
		plans[fmt.Sprintf("index of filter %d", i)] = joined
		for _, n := range []int{1, 3, 20, 1000} {
			walk := joined
			walk.walk = n
			plans[fmt.Sprintf("a walk of %d, then the index of filter %d", n, i)] = walk
		}
		if len(q.Filters) == 1 && sc == nil && s.sub.Exact() {
			known := r.listSource(q, sc)
			known.known = s.matches
			plans["known count"] = known
			if _, byID := idOrder(q.Order); byID {
				ids := known
				ids.page, ids.idsPage = s.through, true
				plans["ids from the index"] = ids
				ids.walk = 1 + len(records)/10
				plans["a walk, then ids from the index"] = ids
			}
		}
	}
	for name, src := range plans {
		p, err := r.list(ctx, q, src)
		if wantErr {
			if err == nil {
				t.Errorf("%s (%s): page %d of %d records, want an invalid page", query, name, p.Page, p.Count)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s (%s): %v", query, name, err)
		}
		var got []int
		for _, row := range p.Rows {
			got = append(got, row.ID)
		}
		if !slices.Equal(got, want) || p.Count != wantCount {
			t.Errorf("%s (%s): %v, count %d; want %v, count %d", query, name, got, p.Count, want, wantCount)
		}
	}
}

// descendantsOf returns the records below id.
func descendantsOf(r *Resource, records []record.Row, id int) []record.Row {
	below := map[int]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, row := range records {
			if p := row.Values[r.fields.Parent]; p.Valid && below[int(p.Int)] && !below[row.ID] {
				below[row.ID], grew = true, true
			}
		}
	}
	var out []record.Row
	for _, row := range records {
		if below[row.ID] && row.ID != id {
			out = append(out, row)
		}
	}
	return out
}

// expected answers q over records by brute force: the ids of its page,
// the count, and whether the page is past the last.
func expected(r *Resource, q Query, records []record.Row) (ids []int, count int, invalid bool) {
	var match []record.Row
	for _, row := range records {
		ok := true
		for _, f := range q.Filters {
			v := row.Values[f.Field]
			switch f.Op {
			case record.OpIContains:
				ok = ok && v.Valid && strings.Contains(casefold.Fold(v.Str), f.Value.Str)
			case record.OpIsNull:
				ok = ok && !v.Valid == (f.Value.Int == 1)
			default:
				panic("the test makes no other filter")
			}
		}
		if ok {
			match = append(match, row)
		}
	}
	slices.SortFunc(match, func(a, b record.Row) int {
		last := false
		for _, o := range q.Order {
			last = o.Desc
			if o.Field < 0 {
				break
			}
			va, vb := a.Values[o.Field].Str, b.Values[o.Field].Str
			c := cmp.Or(strings.Compare(casefold.Fold(va), casefold.Fold(vb)), strings.Compare(va, vb))
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		if last {
			return cmp.Compare(b.ID, a.ID)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	page := q.Page
	if q.Last {
		page = max(1, (len(match)+q.PageSize-1)/q.PageSize)
	}
	offset := (page - 1) * q.PageSize
	if offset >= len(match) && page > 1 {
		return nil, len(match), true
	}
	for _, row := range match[offset:min(offset+q.PageSize, len(match))] {
		ids = append(ids, row.ID)
	}
	return ids, len(match), false
}

// searchedFields are the fields of r with a substring filter.
func searchedFields(r *Resource) []int {
	var out []int
	for i := range r.fields.List {
		if r.fields.List[i].Has(record.OpIContains) {
			out = append(out, i)
		}
	}
	return out
}
