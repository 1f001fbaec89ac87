package seed_test

import (
	"testing"

	"personnel/seed"
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
