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
	"strconv"
	"strings"
	"time"
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
	Null Kind = iota // empty
	Text             // a string
	Int              // an integer
	Bool             // true or false (Int 1 or 0)
	Date             // a calendar date, Str as YYYY-MM-DD
	List             // integers, in IDs
)

// Cell is one value of a row.
type Cell struct {
	Kind Kind
	Str  string
	Int  int64
	IDs  []int64
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

// xlsxWriter writes rows with excelize's stream writer, which keeps what
// it has written in a temporary file rather than in memory.
type xlsxWriter struct {
	out       io.Writer
	f         *excelize.File
	sw        *excelize.StreamWriter
	dateStyle int
	row       int
	values    []any
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

func newXLSXWriter(w io.Writer, sheet string) (*xlsxWriter, error) {
	f := excelize.NewFile()
	sheet = SheetName(sheet)
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return nil, err
	}
	format := "yyyy-mm-dd"
	style, err := f.NewStyle(&excelize.Style{CustomNumFmt: &format})
	if err != nil {
		return nil, err
	}
	sw, err := f.NewStreamWriter(sheet)
	if err != nil {
		return nil, err
	}
	return &xlsxWriter{out: w, f: f, sw: sw, dateStyle: style}, nil
}

func (x *xlsxWriter) Header(columns []string) error {
	values := make([]any, len(columns))
	for i, c := range columns {
		values[i] = c
	}
	return x.next(values)
}

func (x *xlsxWriter) next(values []any) error {
	x.row++
	cell, err := excelize.CoordinatesToCellName(1, x.row)
	if err != nil {
		return err
	}
	return x.sw.SetRow(cell, values)
}

func (x *xlsxWriter) Row(cells []Cell) error {
	values := x.values[:0]
	for _, cell := range cells {
		var v any
		switch cell.Kind {
		case Text:
			// A string cell: never a formula, whatever it starts with.
			v = cell.Str
		case Int:
			v = cell.Int
		case Bool:
			v = cell.Int == 1
		case Date:
			if t, err := time.Parse(time.DateOnly, cell.Str); err == nil {
				v = excelize.Cell{StyleID: x.dateStyle, Value: t}
			} else {
				v = cell.Str
			}
		case List:
			v = listText(cell.IDs)
		}
		values = append(values, v)
	}
	x.values = values
	return x.next(values)
}

func (x *xlsxWriter) Close() error {
	if err := x.sw.Flush(); err != nil {
		return err
	}
	// excelize builds the archive in a buffer it then copies out; the
	// archive is written straight to out instead, so the workbook is
	// never whole in memory (the buffer stays empty). A sheet under 4 GiB
	// needs none of the ZIP64 patching done to that buffer.
	x.f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(x.out) })
	_, err := x.f.WriteTo(io.Discard)
	return errors.Join(err, x.f.Close())
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
