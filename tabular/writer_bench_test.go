package tabular_test

import (
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"personnel/tabular"
)

// BenchmarkWriter_MillionRows writes an export of 1,000,000 departments
// (four cells a row) in each format to io.Discard and reports the most
// heap the writer had in use over what was in use before, sampled every
// 10 ms: issue 30 allows a server 32 MiB for such an export, so what a
// writer holds must not grow with its rows. docs/performance.md has the
// figures and the command.
func BenchmarkWriter_MillionRows(b *testing.B) {
	for _, format := range []tabular.Format{tabular.CSV, tabular.XLSX, tabular.JSON} {
		b.Run(string(format), func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				peak = max(peak, writeMillion(b, format))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// writeMillion writes the million rows and returns the most heap in use
// meanwhile over the heap in use before.
func writeMillion(b *testing.B, format tabular.Format) uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	w, err := tabular.NewWriter(format, io.Discard, "departments")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Header([]string{"id", "dept_code", "dept_name", "parent_dept_code"}); err != nil {
		b.Fatal(err)
	}
	cells := make([]tabular.Cell, 4)
	for i := 1; i <= 1_000_000; i++ {
		cells[0] = tabular.Cell{Kind: tabular.Int, Int: int64(i)}
		cells[1] = tabular.Cell{Kind: tabular.Text, Str: "D" + strconv.Itoa(i)}
		cells[2] = tabular.Cell{Kind: tabular.Text, Str: "Department " + strconv.Itoa(i)}
		cells[3] = tabular.Cell{Kind: tabular.Text, Str: "D" + strconv.Itoa(i/7)}
		if err := w.Row(cells); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	close(done)
	<-sampled
	return peak - base
}
