package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"personnel/db"
	"personnel/seed"
	"personnel/server"
)

// seedCommand runs `personnel seed`: it fills resources with a realistic
// forest, through the store, with a progress bar. Resources that already
// hold records are refused before anything is written, unless --append.
func seedCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seed", "seed [--count N] [--resource NAME] [--append] [--seed S] [-config file.yaml]\n\n"+
		"Fill resources with N realistic records each (a forest six levels deep).\n", args, stdout, stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	count := fs.Int("count", 1000, "records to create in each resource")
	only := fs.String("resource", "", "seed only this resource, by name or path (department or departments); default: all")
	appendTo := fs.Bool("append", false, "add to resources that already hold records (codes continue after their count)")
	randSeed := fs.Uint64("seed", 1, "random seed; the same seed makes the same data")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *count < 1 {
		return usagef("seed: --count must be at least 1")
	}
	var names, known []string
	for _, r := range server.CompiledResources() {
		if *only == "" || r.Name == *only || r.Path == *only {
			names = append(names, r.Name)
		}
		known = append(known, r.Name+" ("+r.Path+")")
	}
	if len(names) == 0 {
		return usagef("seed: no resource named %q; there are: %s", *only, strings.Join(known, ", "))
	}
	sort.Strings(names)

	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	ctx := db.WithActor(context.Background(), db.Actor{Command: "seed"})
	d, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	loaders := server.Loaders(d)
	// Check every chosen resource before writing to any, so a refusal
	// leaves the database as it was.
	held := map[string]int{}
	var full []string
	for _, name := range names {
		n, err := loaders[name].Count(ctx)
		if err != nil {
			return err
		}
		held[name] = n
		if n > 0 {
			full = append(full, fmt.Sprintf("%s holds %s", loaders[name].Resource().Path, records(n)))
		}
	}
	if len(full) > 0 && !*appendTo {
		return fmt.Errorf("seed: %s; nothing was written (pass --append to add to them)", strings.Join(full, ", "))
	}
	for _, name := range names {
		l := loaders[name]
		bar := newProgress(stderr, l.Resource().Path)
		start := time.Now()
		err := l.BulkLoad(ctx, func() error {
			return seed.Fill(ctx, l, seed.Options{Count: *count, Seed: *randSeed, First: held[name] + 1, Progress: bar.update})
		})
		bar.finish()
		if err == nil {
			// Number the load's change feed entries now, rather than in
			// the first read of the feed, which has a request's deadline.
			err = d.Sequence(ctx)
		}
		if err != nil {
			return err
		}
		took := time.Since(start)
		fmt.Fprintf(stdout, "seeded %s with %s in %.1f s (%d a second)\n", l.Resource().Path, records(*count),
			took.Seconds(), int(float64(*count)/took.Seconds()))
	}
	return nil
}

// records says "1 record", "2 records".
func records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
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
