package casefold_test

import (
	"testing"

	"personnel/casefold"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"hr", "hr"},
		{"HR-01", "hr-01"},
		{"ÄRZTE", "ärzte"},
		{"Ärzte", "ärzte"},
		{"ОТДЕЛ", "отдел"},
		{"Straße", "strasse"},
		{"STRASSE", "strasse"},
		{"ΣΊΣΥΦΟΣ", "σίσυφοσ"},
		{"σίσυφος", "σίσυφοσ"},
		{"100%_Ok", "100%_ok"},
		{"Mixed Ünïcode", "mixed ünïcode"},
	} {
		if got := casefold.Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The ASCII fast path must agree with the full folder on every ASCII string.
func TestFold_ASCIIFastPathMatchesFullFolding(t *testing.T) {
	var b []byte
	for c := 0; c < 128; c++ {
		b = append(b, byte(c))
	}
	s := string(b)
	got := casefold.Fold(s)
	want := casefold.Fold(s + "é")
	if got+"é" != want {
		t.Fatalf("fast path %q disagrees with full folding %q", got, want)
	}
}

// Folding can make a string longer, but never by more than Expansion times.
func TestFold_ExpansionBound(t *testing.T) {
	for r := rune(0); r <= 0x10FFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if n := len([]rune(casefold.Fold(string(r)))); n > casefold.Expansion {
			t.Fatalf("U+%04X folds to %d code points, more than Expansion=%d", r, n, casefold.Expansion)
		}
	}
}

func TestIdentifier_EqualsLookAlikesAcrossCaseAndWidth(t *testing.T) {
	for _, in := range []string{"admin", "ADMIN", "Admin", "ａｄｍｉｎ", "ＡＤＭＩＮ"} {
		if got := casefold.Identifier(in); got != "admin" {
			t.Errorf("Identifier(%q) = %q, want admin", in, got)
		}
	}
	if casefold.Identifier("Straße") != casefold.Identifier("STRASSE") || casefold.Identifier("ﬁle") != "file" {
		t.Error("folding or compatibility decomposition missing")
	}
}
