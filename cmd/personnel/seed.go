package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"personnel/seed"
	"personnel/server"
)

// seedCommand runs `personnel seed`: it fills empty resources with a
// realistic forest, through the store, with a progress bar.
func seedCommand(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	count := fs.Int("count", 1000, "records to create in each resource")
	only := fs.String("resource", "", "seed only this resource (by name, e.g. department); default: all")
	randSeed := fs.Uint64("seed", 1, "random seed; the same seed makes the same data")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("seed: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	d, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	loaders := server.Loaders(d)
	var names []string
	for name := range loaders {
		if *only == "" || name == *only {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("seed: no resource named %q", *only)
	}
	sort.Strings(names)
	for _, name := range names {
		l := loaders[name]
		bar := newProgress(stderr, l.Resource().Path)
		start := time.Now()
		err := d.BulkLoad(ctx, l.Resource().Table, func() error {
			return seed.Fill(ctx, l, seed.Options{Count: *count, Seed: *randSeed, Progress: bar.update})
		})
		bar.finish()
		if err != nil {
			return err
		}
		took := time.Since(start)
		slog.Info("seeded", "resource", l.Resource().Path, "records", *count,
			"seconds", took.Round(time.Millisecond).Seconds(), "per_second", int(float64(*count)/took.Seconds()))
	}
	return nil
}

// progress draws a bar on a terminal, or logs every tenth otherwise.
type progress struct {
	w        io.Writer
	what     string
	terminal bool
	start    time.Time
	last     time.Time
	tenth    int
}

func newProgress(w io.Writer, what string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, what: what, terminal: ok && term.IsTerminal(int(f.Fd())), start: time.Now()}
}

func (p *progress) update(done, total int) {
	elapsed := time.Since(p.start)
	if !p.terminal {
		if t := done * 10 / total; t > p.tenth {
			p.tenth = t
			slog.Info("seeding", "resource", p.what, "done", done, "of", total)
		}
		return
	}
	if time.Since(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = time.Now()
	const width = 30
	filled := width * done / total
	eta := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	fmt.Fprintf(p.w, "\r%-12s [%s%s] %3d%% %d/%d  %s elapsed, %s left ", p.what,
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), 100*done/total, done, total,
		elapsed.Round(time.Second), eta.Round(time.Second))
}

func (p *progress) finish() {
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}
