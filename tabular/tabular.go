// Package tabular writes and reads the files records go out and come in
// as: CSV (UTF-8, a header row), XLSX (one sheet) and JSON (an array of
// objects). It knows cells and columns, never resources: package resource
// turns records into cells and cells back into field values.
//
// Spreadsheet safety (OWASP's CSV injection): a text cell that a
// spreadsheet would take for a formula (it starts with =, +, -, @, tab or
// carriage return) is written to CSV behind a leading apostrophe, and to
// XLSX as a string cell; the CSV reader strips that apostrophe again, so
// a file goes out and comes back in unchanged.
//
// A list of strings in one cell (a list of references' codes) is
// separated by ";", and a ";" or "\" within a string is escaped by a
// "\" (JoinList, SplitList), so any strings come back as they went out;
// JSON, which has lists, writes an array instead.
package tabular

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"personnel/apierror"
)

// Format is a file format.
type Format string

// The formats.
const (
	CSV  Format = "csv"
	XLSX Format = "xlsx"
	JSON Format = "json"
)

// ContentType is the media type of files of format f.
func (f Format) ContentType() string {
	switch f {
	case XLSX:
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case JSON:
		return "application/json"
	}
	return "text/csv; charset=utf-8"
}

// ParseFormat returns the format named s (csv, xlsx or json).
func ParseFormat(s string) (Format, bool) {
	switch f := Format(strings.ToLower(s)); f {
	case CSV, XLSX, JSON:
		return f, true
	}
	return "", false
}

// FormatOf returns the format of a media type (parameters ignored).
func FormatOf(contentType string) (Format, bool) {
	mt, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	switch strings.TrimSpace(mt) {
	case "text/csv", "application/csv", "text/plain":
		return CSV, true
	case XLSX.ContentType():
		return XLSX, true
	case "application/json":
		return JSON, true
	}
	return "", false
}

// Kind is what a cell holds.
type Kind uint8

// The kinds of cell.
const (
	Null    Kind = iota // empty
	Text                // a string
	Int                 // an integer
	Bool                // true or false (Int 1 or 0)
	Date                // a calendar date, Str as YYYY-MM-DD
	List                // integers, in IDs
	Strings             // strings, in Strs: one cell as JoinList writes it; in JSON an array
)

// Cell is one value of a row.
type Cell struct {
	Kind Kind
	Str  string
	Int  int64
	IDs  []int64
	Strs []string
}

// Writer writes a file: the header, then rows of as many cells.
type Writer interface {
	Header(columns []string) error
	Row(cells []Cell) error
	// Close finishes the file (an XLSX file is written out here).
	Close() error
}

// NewWriter returns a writer of format f to w; sheet names an XLSX
// file's one sheet.
func NewWriter(f Format, w io.Writer, sheet string) (Writer, error) {
	switch f {
	case XLSX:
		return newXLSXWriter(w, sheet)
	case JSON:
		return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	return &csvWriter{w: csv.NewWriter(w)}, nil
}

// risky reports whether a spreadsheet could take text for a formula.
func risky(s string) bool {
	return s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0
}

// Neutralise returns s as a CSV text cell holds it: behind an apostrophe
// when a spreadsheet could take it for a formula, or when it starts with
// an apostrophe itself (so that Restore gives back exactly s).
func Neutralise(s string) string {
	if risky(s) || strings.HasPrefix(s, "'") {
		return "'" + s
	}
	return s
}

// Restore undoes Neutralise: it strips one leading apostrophe before a
// character Neutralise puts one in front of.
func Restore(s string) string {
	if len(s) > 1 && s[0] == '\'' && (risky(s[1:]) || s[1] == '\'') {
		return s[1:]
	}
	return s
}

// listText writes ids as one cell: "1,2,3".
func listText(ids []int64) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// ListSeparator separates the strings of a Strings cell in CSV and XLSX.
const ListSeparator = ';'

// JoinList writes items as one cell: separated by ";", with a ";" or a
// "\" within an item behind a "\", so that SplitList gives back exactly
// items whatever they hold (an empty list comes back as one empty item).
// Items without either are joined as they are ("A;B").
func JoinList(items []string) string {
	var b strings.Builder
	for i, s := range items {
		if i > 0 {
			b.WriteByte(ListSeparator)
		}
		for k := 0; k < len(s); k++ {
			if s[k] == ListSeparator || s[k] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[k])
		}
	}
	return b.String()
}

// SplitList undoes JoinList: it splits cell at each ";" not behind a
// "\", and takes "\;" and "\\" as the character escaped. A "\" before
// anything else is itself, so that a cell written by hand before escapes
// existed ("A\B") reads as it did.
func SplitList(cell string) []string {
	var out []string
	var b strings.Builder
	for k := 0; k < len(cell); k++ {
		c := cell[k]
		switch {
		case c == '\\' && k+1 < len(cell) && (cell[k+1] == ListSeparator || cell[k+1] == '\\'):
			k++
			b.WriteByte(cell[k])
		case c == ListSeparator:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String())
}

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) Header(columns []string) error { return c.w.Write(columns) }

func (c *csvWriter) Row(cells []Cell) error {
	rec := make([]string, len(cells))
	for i, cell := range cells {
		switch cell.Kind {
		case Text:
			rec[i] = Neutralise(cell.Str)
		case Int:
			rec[i] = strconv.FormatInt(cell.Int, 10)
		case Bool:
			rec[i] = strconv.FormatBool(cell.Int == 1)
		case Date:
			rec[i] = cell.Str
		case List:
			rec[i] = listText(cell.IDs)
		case Strings:
			rec[i] = Neutralise(JoinList(cell.Strs))
		}
	}
	return c.w.Write(rec)
}

func (c *csvWriter) Close() error {
	c.w.Flush()
	return c.w.Error()
}

type jsonWriter struct {
	w       *bufio.Writer
	columns []string
	n       int
	buf     []byte
}

func (j *jsonWriter) Header(columns []string) error {
	j.columns = columns
	return j.w.WriteByte('[')
}

func (j *jsonWriter) Row(cells []Cell) error {
	b := j.buf[:0]
	if j.n > 0 {
		b = append(b, ',')
	}
	j.n++
	b = append(b, '{')
	for i, cell := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		b = apierror.AppendString(b, j.columns[i])
		b = append(b, ':')
		switch cell.Kind {
		case Null:
			b = append(b, "null"...)
		case Text, Date:
			b = apierror.AppendString(b, cell.Str)
		case Int:
			b = strconv.AppendInt(b, cell.Int, 10)
		case Bool:
			b = strconv.AppendBool(b, cell.Int == 1)
		case List:
			b = append(b, '[')
			b = append(b, listText(cell.IDs)...)
			b = append(b, ']')
		case Strings:
			b = append(b, '[')
			for k, str := range cell.Strs {
				if k > 0 {
					b = append(b, ',')
				}
				b = apierror.AppendString(b, str)
			}
			b = append(b, ']')
		}
	}
	b = append(b, '}')
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

func (j *jsonWriter) Close() error {
	if err := j.w.WriteByte(']'); err != nil {
		return err
	}
	return j.w.Flush()
}

// SheetName makes name a valid sheet name: at most 31 characters, none of
// []:*?/\.
func SheetName(name string) string {
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`[]:*?/\`, r) {
			return '_'
		}
		return r
	}, name)
	if utf8.RuneCountInString(name) > 31 {
		name = string([]rune(name)[:31])
	}
	if name == "" {
		name = "Sheet1"
	}
	return name
}

// xlsxWriter writes an XLSX file as its rows come: excelize makes every
// part of the workbook but the sheet (workbook, styles with the date
// format, content types, relationships), and the sheet's rows are
// written as XML straight into the archive's compressed entry, which goes
// out to the writer as it fills. Nothing grows with the number of rows.
// excelize's own StreamWriter is not used: it keeps up to StreamChunkSize
// (16 MiB, a constant) of the sheet in a bytes.Buffer, which grows by
// doubling, before it spills to a temporary file, so a large export held
// that buffer, a copy of it while it grew, and the garbage collector's
// headroom over both (see docs/performance.md).
type xlsxWriter struct {
	out       *bufio.Writer
	zw        *zip.Writer
	sheet     io.Writer // the sheet's entry in zw
	tail      string    // the sheet's XML after its rows
	dateStyle int
	row       int
	cols      []string // the columns' letters
	buf       []byte
}

func newXLSXWriter(w io.Writer, sheet string) (*xlsxWriter, error) {
	f := excelize.NewFile()
	defer f.Close()
	sheet = SheetName(sheet)
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return nil, err
	}
	format := "yyyy-mm-dd"
	style, err := f.NewStyle(&excelize.Style{CustomNumFmt: &format})
	if err != nil {
		return nil, err
	}
	// Buffered, so that an export that fails before its first rows have
	// filled the buffer has sent nothing and can still be answered with
	// an error (as the CSV and JSON writers can).
	x := &xlsxWriter{out: bufio.NewWriterSize(w, 64<<10), dateStyle: style}
	x.zw = zip.NewWriter(x.out)
	parts := &partsZip{zw: x.zw}
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return parts })
	// The archive goes to x.zw; what WriteTo copies out is the empty
	// buffer excelize would have built it in.
	if _, err := f.WriteTo(io.Discard); err != nil {
		return nil, err
	}
	if parts.sheetPath == "" {
		return nil, errors.New("tabular: excelize wrote no worksheet")
	}
	// The empty sheet as excelize writes it, opened at its sheetData; its
	// dimension (A1) is dropped rather than left wrong, as excelize's
	// stream writer does.
	ws := dimension.ReplaceAllString(parts.sheet.String(), "")
	head, tail, ok := strings.Cut(ws, "<sheetData></sheetData>")
	if !ok {
		if head, tail, ok = strings.Cut(ws, "<sheetData/>"); !ok {
			return nil, errors.New("tabular: excelize's worksheet has no sheetData")
		}
	}
	if x.sheet, err = x.zw.CreateHeader(&zip.FileHeader{Name: parts.sheetPath, Method: zip.Deflate}); err != nil {
		return nil, err
	}
	x.tail = "</sheetData>" + tail
	_, err = io.WriteString(x.sheet, head+"<sheetData>")
	return x, err
}

// dimension is the worksheet's dimension element.
var dimension = regexp.MustCompile(`<dimension[^>]*(/>|></dimension>)`)

// partsZip is the archive excelize writes a workbook's parts into: all
// of them go to zw as they are, but the worksheet, which is kept to be
// written with its rows.
type partsZip struct {
	zw        *zip.Writer
	sheetPath string
	sheet     bytes.Buffer
}

func (p *partsZip) Create(name string) (io.Writer, error) {
	if path.Dir(name) == "xl/worksheets" && p.sheetPath == "" {
		p.sheetPath = name
		return &p.sheet, nil
	}
	return p.zw.Create(name)
}

func (p *partsZip) AddFS(fsys fs.FS) error { return p.zw.AddFS(fsys) }

// Close leaves the archive open for the sheet's rows.
func (p *partsZip) Close() error { return nil }

func (x *xlsxWriter) Header(columns []string) error {
	cells := make([]Cell, len(columns))
	for i, c := range columns {
		cells[i] = Cell{Kind: Text, Str: c}
	}
	return x.Row(cells)
}

// Row writes a row as excelize's stream writer would: integers and
// booleans as numbers, dates as numbers in the date style, all else as
// inline string cells (never a formula, whatever the text starts with).
func (x *xlsxWriter) Row(cells []Cell) error {
	x.row++
	if x.row > excelize.TotalRows {
		return excelize.ErrMaxRows
	}
	for len(x.cols) < len(cells) {
		name, err := excelize.ColumnNumberToName(len(x.cols) + 1)
		if err != nil {
			return err
		}
		x.cols = append(x.cols, name)
	}
	r := strconv.Itoa(x.row)
	b := append(x.buf[:0], `<row r="`...)
	b = append(b, r...)
	b = append(b, `">`...)
	for i, cell := range cells {
		if cell.Kind == Null {
			continue
		}
		b = append(b, `<c r="`...)
		b = append(b, x.cols[i]...)
		b = append(b, r...)
		b = append(b, '"')
		switch cell.Kind {
		case Int:
			b = append(b, "><v>"...)
			b = strconv.AppendInt(b, cell.Int, 10)
			b = append(b, "</v>"...)
		case Bool:
			b = append(b, ` t="b"><v>`...)
			b = strconv.AppendInt(b, cell.Int, 10)
			b = append(b, "</v>"...)
		case Date:
			if serial, ok := dateSerial(cell.Str); ok {
				b = append(b, ` s="`...)
				b = strconv.AppendInt(b, int64(x.dateStyle), 10)
				b = append(b, `"><v>`...)
				b = strconv.AppendInt(b, serial, 10)
				b = append(b, "</v>"...)
			} else {
				b = appendInlineString(b, cell.Str)
			}
		case List:
			b = appendInlineString(b, listText(cell.IDs))
		case Strings:
			b = appendInlineString(b, JoinList(cell.Strs))
		default:
			b = appendInlineString(b, cell.Str)
		}
		b = append(b, "</c>"...)
	}
	b = append(b, "</row>"...)
	x.buf = b
	_, err := x.sheet.Write(b)
	return err
}

// dateSerial is the spreadsheet's number of the day s (YYYY-MM-DD), as
// excelize counts it (from 1900-01-01 as 1, with the 29 February 1900
// that Excel, after Lotus 1-2-3, believes in); false for a day before
// 1900, which has no number, or for what is not a date.
func dateSerial(s string) (int64, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Year() < 1900 {
		return 0, false
	}
	// Counted in seconds: a time.Duration spans no more than 292 years.
	n := (t.Unix() - time.Date(1899, time.December, 31, 0, 0, 0, 0, time.UTC).Unix()) / (24 * 60 * 60)
	if !t.Before(time.Date(1900, time.March, 1, 0, 0, 0, 0, time.UTC)) {
		n++
	}
	return n, true
}

// appendInlineString appends the rest of a cell holding s as an inline
// string: cut to the most UTF-16 units a cell holds, kept with its
// leading and trailing spaces, and escaped for XML and for the
// spreadsheet's own _xHHHH_ escapes, so that excelize reads back s.
func appendInlineString(b []byte, s string) []byte {
	s = truncateUTF16(s, excelize.TotalCellChars)
	b = append(b, ` t="inlineStr"><is><t`...)
	if s != "" && (strings.IndexByte("\t\n\r ", s[0]) >= 0 || strings.IndexByte("\t\n\r ", s[len(s)-1]) >= 0) {
		b = append(b, ` xml:space="preserve"`...)
	}
	b = append(b, '>')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '&':
			b = append(b, "&amp;"...)
		case c == '<':
			b = append(b, "&lt;"...)
		case c == '>':
			b = append(b, "&gt;"...)
		case c == '\r':
			// Kept as a reference: XML reads a raw carriage return as a
			// line feed.
			b = append(b, "&#xD;"...)
		case c == '_' && escapeLike(s[i:]):
			// A literal "_xHHHH_" would be read as the character HHHH.
			b = append(b, "_x005F"...)
			b = append(b, '_')
		case c < 0x20 && c != '\t' && c != '\n':
			// Not allowed in XML at all; the spreadsheet's escape carries
			// it.
			b = append(b, "_x00"...)
			b = append(b, "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15], '_')
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == 0xFFFE || r == 0xFFFF {
				r = utf8.RuneError // not allowed in XML
			}
			b = utf8.AppendRune(b, r)
			i += n
			continue
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, "</t></is>"...)
}

// escapeLike reports whether s starts with _xHHHH_, the form of the
// spreadsheet's escape for a character.
func escapeLike(s string) bool {
	if len(s) < 7 || s[0] != '_' || s[1] != 'x' || s[6] != '_' {
		return false
	}
	for _, c := range []byte(s[2:6]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// truncateUTF16 cuts s to at most n UTF-16 code units, as a spreadsheet
// counts a cell's length.
func truncateUTF16(s string, n int) string {
	if len(s) <= n {
		return s
	}
	units := 0
	for i, r := range s {
		if units += utf16.RuneLen(r); units > n {
			return s[:i]
		}
	}
	return s
}

func (x *xlsxWriter) Close() error {
	if _, err := io.WriteString(x.sheet, x.tail); err != nil {
		return err
	}
	if err := x.zw.Close(); err != nil {
		return err
	}
	return x.out.Flush()
}

// ErrTooManyRows is what a reader returns for a file of more rows than
// its limit.
var ErrTooManyRows = errors.New("tabular: too many rows")

// File is a file read: its header, and its rows as text (CSV, XLSX) or
// as JSON objects (JSON), each with its row number.
type File struct {
	Header  []string
	Rows    [][]string                   // CSV and XLSX: a cell of each column, "" when missing
	Objects []map[string]json.RawMessage // JSON: one object a row
	// Line is the number of each row as a person finds it: in a
	// spreadsheet (the header is row 1), or the element of a JSON array
	// (from 1).
	Line []int
}

// Read reads a whole file of format f, at most maxRows rows (beyond:
// ErrTooManyRows). Other errors are *apierror.Error values saying what
// is wrong with the file.
func Read(f Format, data []byte, maxRows int) (*File, error) {
	switch f {
	case XLSX:
		return readXLSX(data, maxRows)
	case JSON:
		return readJSON(data, maxRows)
	}
	return readCSV(data, maxRows)
}

func invalid(format string, args ...any) error {
	return apierror.New(apierror.Invalid, fmt.Sprintf(format, args...))
}

func readCSV(data []byte, maxRows int) (*File, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // Excel's byte order mark
	if !utf8.Valid(data) {
		return nil, invalid("The file is not valid UTF-8; save the CSV file as UTF-8 (\"CSV UTF-8\" in Excel).")
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	file := &File{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, invalid("The CSV file is malformed at row %d: %v.", pe.StartLine, pe.Err)
			}
			return nil, invalid("The CSV file could not be read.")
		}
		if file.Header == nil {
			file.Header = rec
			continue
		}
		if blank(rec) {
			continue
		}
		if len(file.Rows) == maxRows {
			return nil, ErrTooManyRows
		}
		for i := range rec {
			rec[i] = Restore(rec[i])
		}
		file.Rows = append(file.Rows, rec)
		file.Line = append(file.Line, line)
	}
	if file.Header == nil {
		return nil, invalid("The file is empty; it must begin with a header row.")
	}
	return file, nil
}

// blank reports whether every cell of a row is empty (spreadsheets leave
// such rows behind).
func blank(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

func readXLSX(data []byte, maxRows int) (file *File, err error) {
	defer func() {
		// The library is not proof against every malformed archive.
		if p := recover(); p != nil {
			file, err = nil, invalid("The XLSX file could not be read.")
		}
	}()
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{RawCellValue: true, UnzipSizeLimit: maxUnzipped})
	if err != nil {
		return nil, invalid("The file is not an XLSX workbook.")
	}
	defer f.Close()
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		return nil, invalid("The XLSX workbook has no sheet.")
	}
	rows, err := f.Rows(sheets[0])
	if err != nil {
		return nil, invalid("The first sheet of the XLSX workbook could not be read.")
	}
	defer rows.Close()
	file = &File{}
	for n := 1; rows.Next(); n++ {
		rec, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			return nil, invalid("Row %d of the XLSX workbook could not be read.", n)
		}
		if file.Header == nil {
			if blank(rec) {
				continue
			}
			file.Header = rec
			continue
		}
		if blank(rec) {
			continue
		}
		if len(file.Rows) == maxRows {
			return nil, ErrTooManyRows
		}
		file.Rows = append(file.Rows, rec)
		file.Line = append(file.Line, n)
	}
	if err := rows.Error(); err != nil {
		return nil, invalid("The XLSX workbook could not be read.")
	}
	if file.Header == nil {
		return nil, invalid("The file is empty; it must begin with a header row.")
	}
	return file, nil
}

func readJSON(data []byte, maxRows int) (*File, error) {
	if !utf8.Valid(data) {
		return nil, invalid("The file is not valid UTF-8.")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, invalid("The file is not a JSON array of objects.")
	}
	if len(items) > maxRows {
		return nil, ErrTooManyRows
	}
	file := &File{Header: []string{}}
	seen := map[string]bool{}
	for i, item := range items {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(item, &m); err != nil || m == nil {
			return nil, invalid("Element %d of the array is not a JSON object.", i+1)
		}
		for k := range m {
			if !seen[k] {
				seen[k] = true
				file.Header = append(file.Header, k)
			}
		}
		file.Objects = append(file.Objects, m)
		file.Line = append(file.Line, i+1)
	}
	return file, nil
}

// DateFromSerial turns a spreadsheet's serial day number (what an XLSX
// date cell holds) into YYYY-MM-DD.
func DateFromSerial(s string) (string, bool) {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 1 || n > 2958465 {
		return "", false
	}
	t, err := excelize.ExcelDateToTime(n, false)
	if err != nil {
		return "", false
	}
	return t.Format(time.DateOnly), true
}

// maxUnzipped bounds what an XLSX file may unpack to: a small archive
// that unpacks to gigabytes is refused rather than read.
const maxUnzipped = 1 << 30
