// Package seed fills a resource with a realistic forest of records, for
// trying the service out and for benchmarks: a few hundred roots, up to six
// levels, random fan-out, codes like D000123, and names in several scripts
// and letter cases, many of them repeated. The same seed gives the same data.
package seed

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"personnel/resource"
)

// Levels is the depth of the generated forest.
const Levels = 6

// Options control Fill.
type Options struct {
	Count    int                   // records to create
	First    int                   // number in the first code (D000001 is 1); 0 means 1, into an empty resource
	Seed     uint64                // random seed; the same seed gives the same data
	Batch    int                   // records per transaction (default 20000)
	Progress func(done, total int) // called after each batch, if set
}

// Fill loads opts.Count records into l. Codes are numbered from
// opts.First; without it, l must be empty and they start at 1. With it,
// the records are added beside those there (as a forest of their own).
func Fill(ctx context.Context, l resource.Loader, opts Options) error {
	if opts.Count < 1 {
		return fmt.Errorf("seed: count must be at least 1")
	}
	if opts.Batch < 1 {
		opts.Batch = 20000
	}
	n, err := l.Count(ctx)
	if err != nil {
		return err
	}
	if n > 0 && opts.First == 0 {
		return fmt.Errorf("seed: %s already has %d records; seed fills empty resources only", l.Resource().Path, n)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	r := l.Resource()
	prefix := strings.ToUpper(r.Name[:1])
	first := max(1, opts.First)
	width := max(6, len(strconv.Itoa(first+opts.Count-1)))
	done := 0
	var parents []int // ids of the previous level
	for level, size := range LevelSizes(opts.Count) {
		ids := make([]int, 0, size)
		for start := 0; start < size; start += opts.Batch {
			batch := make([]resource.NewRecord, min(opts.Batch, size-start))
			for i := range batch {
				done++
				batch[i] = resource.NewRecord{
					Code: fmt.Sprintf("%s%0*d", prefix, width, first+done-1),
					Name: name(rng, r.Limits.Name),
				}
				if level > 0 {
					p := parents[rng.IntN(len(parents))]
					batch[i].ParentID = &p
				}
			}
			got, err := l.Load(ctx, batch)
			if err != nil {
				return fmt.Errorf("seed: %s: %w", r.Path, err)
			}
			ids = append(ids, got...)
			if opts.Progress != nil {
				opts.Progress(done, opts.Count)
			}
		}
		parents = ids
	}
	return nil
}

// LevelSizes splits count records over at most Levels levels: about
// count^0.4 roots, each level a constant factor larger than the one above.
func LevelSizes(count int) []int {
	roots := max(1, int(math.Round(math.Pow(float64(count), 0.4))))
	if roots >= count {
		return []int{count}
	}
	// Find the growth factor b with roots * (1 + b + ... + b^(Levels-1)) = count.
	total := func(b float64) float64 {
		s, t := 0.0, 1.0
		for range Levels {
			s += t
			t *= b
		}
		return float64(roots) * s
	}
	lo, hi := 1.0, float64(count)
	for range 100 {
		mid := (lo + hi) / 2
		if total(mid) < float64(count) {
			lo = mid
		} else {
			hi = mid
		}
	}
	sizes, left := []int{roots}, count-roots
	for size := float64(roots); left > 0; {
		size *= hi
		n := min(left, max(1, int(math.Round(size))))
		if len(sizes) == Levels-1 {
			n = left
		}
		sizes = append(sizes, n)
		left -= n
	}
	return sizes
}

// Names are made of a unit and a place, in several languages and scripts,
// with letter case varied as people type it.
var (
	units = []string{
		"Sales", "Vertrieb", "Ärzte", "Pflege", "Finanzen", "Buchhaltung", "Logistics", "Logística",
		"Recursos Humanos", "Human Resources", "Einkauf", "Qualité", "Contrôle de gestion", "Entwicklung",
		"Отдел кадров", "Бухгалтерия", "Продажи", "Склад", "Λογιστήριο", "Πωλήσεις", "Προσωπικό",
		"営業部", "総務部", "人事部", "経理部", "技術部", "研究開発", "محاسبة", "مبيعات",
		"Straße & Bau", "Øresund Drift", "Wartung", "Kantine", "IT Service", "Security", "Legal",
		"Marketing", "Recepción", "Almacén", "Producción", "Kundendienst", "Facility", "Ñandú Labs",
	}
	places = []string{
		"Nord", "Süd", "Ost", "West", "Berlin", "München", "Köln", "Zürich", "Wien", "Paris", "Lyon",
		"Madrid", "Sevilla", "Lisboa", "Москва", "Санкт-Петербург", "Αθήνα", "東京", "大阪", "دبي",
		"Kraków", "Łódź", "İstanbul", "São Paulo", "Montréal", "Reykjavík", "Göteborg", "Århus",
		"Headquarters", "Zentrale", "Filiale 1", "Filiale 2", "Werk A", "Werk B", "Online",
	}
)

func name(rng *rand.Rand, limit int) string {
	n := units[rng.IntN(len(units))] + " " + places[rng.IntN(len(places))]
	if rng.IntN(4) == 0 {
		n += " " + strconv.Itoa(1+rng.IntN(99))
	}
	switch rng.IntN(10) {
	case 0:
		n = strings.ToUpper(n)
	case 1:
		n = strings.ToLower(n)
	}
	if r := []rune(n); len(r) > limit {
		n = string(r[:limit])
	}
	return n
}
