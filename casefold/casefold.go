// Package casefold provides the one case-folding function that every
// case-insensitive comparison in Personnel goes through.
//
// SQLite's lower() and LIKE fold ASCII only, and MariaDB's case-insensitive
// collations differ from MySQL's, so neither database can be trusted to fold
// letters the same way. Instead the service stores a folded copy of every
// code and name, computed here, and compares folded values byte for byte on
// every backend. That makes "ÄRZTE" find "Ärzte" and "ОТДЕЛ" find "отдел"
// identically everywhere.
package casefold

import (
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Expansion is the most code points full case folding can produce from one
// code point (for example U+0390 folds to three). Columns that hold folded
// text are sized at Expansion times the limit of the original.
const Expansion = 3

// Fold returns the Unicode full case folding of s (the caseless-matching
// form of the Unicode standard: "Straße" and "STRASSE" both fold to
// "strasse"). ASCII-only input takes a fast path with the same result.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return cases.Fold().String(s)
		}
		if 'A' <= c && c <= 'Z' {
			return foldASCII(s, i)
		}
	}
	return s
}

// foldASCII lowers s from index i on, or hands over to the full folder as
// soon as a non-ASCII byte appears.
func foldASCII(s string, i int) string {
	b := []byte(s)
	for ; i < len(b); i++ {
		c := b[i]
		if c >= utf8.RuneSelf {
			return cases.Fold().String(s)
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Identifier returns the form in which two identifiers (usernames) that a
// person could not tell apart are equal: compatibility-normalised (NFKC, so
// full-width "ａｄｍｉｎ" is "admin"), folded, and normalised again, since
// folding can undo a normalisation (Unicode's NFKC_Casefold, less its removal
// of default-ignorable characters, which no username may contain).
func Identifier(s string) string {
	return norm.NFKC.String(Fold(norm.NFKC.String(s)))
}
