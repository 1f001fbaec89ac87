package resource

import "testing"

func TestLoneSurrogate_FindsHalfPairsOnly(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want rune // 0: none
	}{
		{`"a\ud800b"`, 0xD800},
		{`"\udc00"`, 0xDC00},
		{`"\ud83d"`, 0xD83D},
		{`"\u00e9\ud800"`, 0xD800},
		{`"\ud83d\ude00"`, 0},
		{`"x\\ud800"`, 0}, // an escaped backslash, then plain text
		{`"plain"`, 0},
	} {
		r, lone := loneSurrogate([]byte(tc.raw))
		if lone != (tc.want != 0) || r != tc.want {
			t.Errorf("loneSurrogate(%s) = %U, %v; want %U", tc.raw, r, lone, tc.want)
		}
	}
}
