package tabular_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"personnel/apierror"
	"personnel/tabular"
)

// What Neutralise writes, Restore gives back exactly, and no text it
// writes starts with what a spreadsheet takes for a formula.
func TestNeutralise_RoundTripsAndDisarmsFormulas(t *testing.T) {
	for _, s := range []string{"=1+2", "+A1", "-5", "@SUM(A1)", "\tx", "\rx", "'", "'=x", "''y", "plain", "", "a=b"} {
		n := tabular.Neutralise(s)
		if n != "" && strings.ContainsRune("=+-@\t\r", rune(n[0])) {
			t.Errorf("Neutralise(%q) = %q starts a formula", s, n)
		}
		if got := tabular.Restore(n); got != s {
			t.Errorf("Restore(Neutralise(%q)) = %q", s, got)
		}
	}
}

// A CSV file may start with Excel's byte order mark; one that is not
// UTF-8 is refused with a message saying which encoding is expected.
func TestRead_CSVTakesABOMAndRefusesOtherEncodings(t *testing.T) {
	f, err := tabular.Read(tabular.CSV, []byte("\xef\xbb\xbfcode,name\nA,\xc3\xa9\n"), 10)
	if err != nil || f.Header[0] != "code" || f.Rows[0][1] != "é" || f.Line[0] != 2 {
		t.Fatalf("BOM: %+v, %v", f, err)
	}
	_, err = tabular.Read(tabular.CSV, []byte("code,name\nA,\xe9\n"), 10)
	var ae *apierror.Error
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, "UTF-8") {
		t.Fatalf("Latin-1: %v", err)
	}
	if _, err := tabular.Read(tabular.CSV, []byte("code\n1\n2\n3\n"), 2); !errors.Is(err, tabular.ErrTooManyRows) {
		t.Fatalf("3 rows over a limit of 2: %v", err)
	}
}

// An XLSX file written by the writer reads back with the same cells.
func TestRead_XLSXReadsWhatTheWriterWrote(t *testing.T) {
	var b bytes.Buffer
	w, err := tabular.NewWriter(tabular.XLSX, &b, "departments")
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Header([]string{"id", "code", "day", "ok"})
	_ = w.Row([]tabular.Cell{{Kind: tabular.Int, Int: 7}, {Kind: tabular.Text, Str: "=HR"}, {Kind: tabular.Date, Str: "2024-02-29"}, {Kind: tabular.Bool, Int: 1}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := tabular.Read(tabular.XLSX, b.Bytes(), 10)
	if err != nil {
		t.Fatal(err)
	}
	row := f.Rows[0]
	day, _ := tabular.DateFromSerial(row[2])
	if row[0] != "7" || row[1] != "=HR" || day != "2024-02-29" || row[3] != "1" || f.Line[0] != 2 {
		t.Fatalf("read back %q (day %s)", row, day)
	}
}

// Text the spreadsheet's XML cannot hold as it is (markup, control
// characters, leading and trailing spaces, what looks like the
// spreadsheet's own _xHHHH_ escapes) and dates on either side of Excel's
// 29 February 1900 read back from an XLSX file exactly as written.
func TestRead_XLSXReadsBackEveryTextAndDate(t *testing.T) {
	texts := []string{"<a & b>", "a\x01b\x1f", " lead", "trail\n", "a\r\nb", "\tx", "_x0041_", "_x005F_x0041_", "_xD800_", "x_x00", "é 漢字 😀", "'=HR", ""}
	dates := []string{"1900-01-01", "1900-02-28", "1900-03-01", "2024-02-29", "9999-12-31", "1899-12-31"}
	var b bytes.Buffer
	w, err := tabular.NewWriter(tabular.XLSX, &b, "departments")
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Header([]string{"text", "day"})
	for i := range max(len(texts), len(dates)) {
		row := make([]tabular.Cell, 2)
		if i < len(texts) {
			row[0] = tabular.Cell{Kind: tabular.Text, Str: texts[i]}
		}
		if i < len(dates) {
			row[1] = tabular.Cell{Kind: tabular.Date, Str: dates[i]}
		}
		if err := w.Row(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := tabular.Read(tabular.XLSX, b.Bytes(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range f.Rows {
		if i < len(texts) && row[0] != texts[i] {
			t.Errorf("text %q read back as %q", texts[i], row[0])
		}
		if i < len(dates) {
			day := row[1]
			if d, ok := tabular.DateFromSerial(day); ok {
				day = d
			}
			if day != dates[i] {
				t.Errorf("date %s read back as %q", dates[i], row[1])
			}
		}
	}
}

// FuzzRead: no bytes make a reader panic, and every refusal is an error
// the API can answer (a 400), or the row limit (a 413).
func FuzzRead(f *testing.F) {
	f.Add([]byte("code,name\nA,B\n"))
	f.Add([]byte("\xef\xbb\xbfcode,\"na\nme\"\n'=x,\"y\"\"\"\n"))
	f.Add([]byte(`[{"code":"A"}]`))
	f.Add([]byte("PK\x03\x04"))
	var b bytes.Buffer
	w, _ := tabular.NewWriter(tabular.XLSX, &b, "s")
	_ = w.Header([]string{"code"})
	_ = w.Row([]tabular.Cell{{Kind: tabular.Text, Str: "A"}})
	_ = w.Close()
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []tabular.Format{tabular.CSV, tabular.XLSX, tabular.JSON} {
			_, err := tabular.Read(format, data, 100)
			var ae *apierror.Error
			if err != nil && !errors.As(err, &ae) && !errors.Is(err, tabular.ErrTooManyRows) {
				t.Fatalf("%s: %v is neither an API error nor the row limit", format, err)
			}
		}
	})
}

// What JoinList writes, SplitList gives back exactly, whatever the items
// hold; items with neither ";" nor "\" are joined as they are, and a "\"
// before anything else reads as itself.
func TestJoinList_SplitListGivesBackAnyItems(t *testing.T) {
	for _, items := range [][]string{{"A", "B"}, {"a;b"}, {`a\b`, `c\`, `\;`}, {`\\;;`, ""}, {"x"}, {";", `\`}} {
		cell := tabular.JoinList(items)
		if got := tabular.SplitList(cell); !slices.Equal(got, items) {
			t.Errorf("SplitList(JoinList(%q) = %q) = %q", items, cell, got)
		}
	}
	if got := tabular.JoinList([]string{"A", "B"}); got != "A;B" {
		t.Errorf("plain items joined as %q, want A;B", got)
	}
	if got := tabular.SplitList(`A\B;C`); !slices.Equal(got, []string{`A\B`, "C"}) {
		t.Errorf(`SplitList("A\B;C") = %q`, got)
	}
}
