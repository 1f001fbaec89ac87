package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"personnel/apierror"
	"personnel/config"
	"personnel/db"
	"personnel/resource"
	"personnel/server"
	"personnel/tabular"
)

// The import and export commands go through the same code as the API's
// import and export endpoints (resource.Import, resource.Export), with
// the command as the audit trail's actor.

// parseWithFiles parses args with fs, flags before or after the file
// names, and returns the file names.
func parseWithFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// pickResource returns the resource named name (or by its path).
func pickResource(name string, all map[string]*resource.Resource) (*resource.Resource, error) {
	var known []string
	for _, r := range server.CompiledResources() {
		if r.Name == name || r.Path == name {
			return all[r.Name], nil
		}
		known = append(known, r.Name+" ("+r.Path+")")
	}
	return nil, usagef("no resource named %q; there are: %s", name, strings.Join(known, ", "))
}

// openResource opens the database cfg names and returns the resource
// named name (or by its path) on it.
func openResource(ctx context.Context, cfg *config.Config, name string) (*db.DB, *resource.Resource, error) {
	d, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	r, err := pickResource(name, server.ResourcesOf(d, cfg))
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, r, nil
}

// exportCommand runs `personnel export`.
func exportCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "export --resource NAME [--format csv|xlsx|json] [--query 'dept_code_icontains=HR'] [--output FILE | FILE] [-config file.yaml]\n\n"+
		"Write every record of a resource (those the list's filters in --query select, in its ordering) to a file, or to standard output.\n", args, stdout, stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	name := fs.String("resource", "", "the resource, by name or path (department or departments)")
	format := fs.String("format", "", "csv, xlsx or json (default: from the output file's extension, else csv)")
	query := fs.String("query", "", "the list's filters and ordering, as in the API's query string")
	output := fs.String("output", "", "the file to write; default: standard output")
	files, err := parseWithFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 1 || len(files) == 1 && *output != "" {
		return usagef("export: give one output file")
	}
	if len(files) == 1 {
		*output = files[0]
	}
	if *name == "" {
		return usagef("export: --resource is required")
	}
	f := tabular.CSV
	if *format == "" && *output != "" {
		if ext, ok := tabular.ParseFormat(strings.TrimPrefix(filepath.Ext(*output), ".")); ok {
			f = ext
		}
	} else if *format != "" {
		var ok bool
		if f, ok = tabular.ParseFormat(*format); !ok {
			return usagef("export: --format must be csv, xlsx or json")
		}
	}
	values, err := url.ParseQuery(*query)
	if err != nil {
		return usagef("export: --query: %v", err)
	}
	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	ctx := db.WithActor(context.Background(), db.Actor{Command: "export"})
	d, r, err := openResource(ctx, cfg, *name)
	if err != nil {
		return err
	}
	defer d.Close()
	q, err := r.ParseQuery(values, "format")
	if err != nil {
		return fmt.Errorf("export: --query: %s", apierror.As(err).Msg)
	}
	out := stdout
	var file *os.File
	if *output != "" {
		if file, err = os.Create(*output); err != nil {
			return err
		}
		defer file.Close()
		out = file
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	w, err := tabular.NewWriter(f, bw, r.Resource().Path)
	if err != nil {
		return err
	}
	if err := r.Export(ctx, q, w); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if file != nil {
		return file.Close()
	}
	return nil
}

// importCommand runs `personnel import`.
func importCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", "import --resource NAME [--dry-run] [--delete-missing] [--mode upsert|create] [--format csv|xlsx|json] FILE [-config file.yaml]\n\n"+
		"Create and update records from a file (CSV, XLSX or JSON, as export writes them), all or nothing.\n"+
		"Exit status 1, with every bad row listed, when the file is refused.\n", args, stdout, stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	name := fs.String("resource", "", "the resource, by name or path (department or departments)")
	format := fs.String("format", "", "csv, xlsx or json (default: from the file's extension)")
	dryRun := fs.Bool("dry-run", false, "check and count, write nothing")
	deleteMissing := fs.Bool("delete-missing", false, "also delete the records whose codes the file lacks")
	mode := fs.String("mode", "upsert", "upsert, or create (a row whose code exists is an error)")
	files, err := parseWithFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usagef("import: give one file")
	}
	if *name == "" {
		return usagef("import: --resource is required")
	}
	if *mode != "upsert" && *mode != "create" {
		return usagef("import: --mode must be upsert or create")
	}
	path := files[0]
	fname := *format
	if fname == "" {
		fname = strings.TrimPrefix(filepath.Ext(path), ".")
	}
	f, ok := tabular.ParseFormat(fname)
	if !ok {
		return usagef("import: say --format csv, xlsx or json (the file's extension does not)")
	}
	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Size() > cfg.ImportLimit {
		return fmt.Errorf("import: the file is larger than PERSONNEL_IMPORT_LIMIT (%d bytes)", cfg.ImportLimit)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	file, err := tabular.Read(f, data, cfg.ImportRows)
	if errors.Is(err, tabular.ErrTooManyRows) {
		return fmt.Errorf("import: the file has more than PERSONNEL_IMPORT_ROWS (%d) rows", cfg.ImportRows)
	}
	if err != nil {
		return fmt.Errorf("import: %s", apierror.As(err).Msg)
	}
	ctx := db.WithActor(context.Background(), db.Actor{Command: "import"})
	d, r, err := openResource(ctx, cfg, *name)
	if err != nil {
		return err
	}
	defer d.Close()
	opts := resource.ImportOptions{CreateOnly: *mode == "create", DryRun: *dryRun, DeleteMissing: *deleteMissing}
	var bar *progress
	if len(file.Line) > 10000 {
		bar = newProgress(stderr, r.Resource().Path)
		opts.Progress = bar.update
	}
	res, err := r.Import(ctx, file, opts)
	if bar != nil {
		bar.finish()
	}
	if ae := apierror.As(err); err != nil && ae.Kind != apierror.Internal {
		return fmt.Errorf("import: %s", ae.Msg)
	} else if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for _, row := range res.Rows {
		for _, fe := range row.Fields {
			fmt.Fprintf(stderr, "row %d: %s: %s\n", row.Row, fe.Field, fe.Msg)
		}
	}
	what := "imported"
	if *dryRun {
		what = "dry run"
	}
	if len(res.Rows) > 0 {
		return fmt.Errorf("import: %d rows of %s are invalid; nothing was imported", len(res.Rows), path)
	}
	fmt.Fprintf(stdout, "%s %s: %d created, %d updated, %d unchanged, %d deleted\n", what, r.Resource().Path, res.Created, res.Updated, res.Unchanged, res.Deleted)
	return nil
}
