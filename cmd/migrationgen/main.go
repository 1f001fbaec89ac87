// Command migrationgen writes the next versioned migration step of each
// database, when the schema the code describes differs from the one the
// last step left: the tables of the Ent schemas (ent/schema), and the
// tables each structure keeps beside a resource table (package db). `go
// generate ./...` runs it after Ent's generator.
//
// It needs no database server: Atlas compares the two schemas and writes
// the statements offline, for SQLite, MySQL (MariaDB and TiDB included)
// and PostgreSQL. The schema the last step left is kept beside the steps,
// in migrations/<database>/schema.hcl, and rewritten with each new step;
// atlas.sum, the checksum of every step, too, and also when no step is
// written, for steps written by hand. A step creating a structure
// records its state (trusted when its resource table is new, so empty;
// untrusted, to be rebuilt, when the table already holds records).
//
//	go run ./cmd/migrationgen -resources config/resources.yaml -dir db/migrations
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"personnel/config"
	"personnel/db"
	"personnel/db/schemagen"
	entmigrate "personnel/ent/migrate"
)

func main() {
	resources := flag.String("resources", config.ResourcesFile, "the resources list")
	dir := flag.String("dir", "db/migrations", "directory of the migration steps, one folder per database")
	flag.Parse()
	if err := run(*resources, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "migrationgen:", err)
		os.Exit(1)
	}
}

func run(resourcesPath, dir string) error {
	data, err := os.ReadFile(resourcesPath)
	if err != nil {
		return err
	}
	rs, err := config.ParseResources(data, resourcesPath)
	if err != nil {
		return err
	}
	ctx := context.Background()
	next, err := nextVersion(dir)
	if err != nil {
		return err
	}
	plans := map[string]*schemagen.Step{}
	changed := false
	for d, folder := range db.MigrationDialects {
		step, err := schemagen.Plan(ctx, d, entmigrate.Tables, rs, filepath.Join(dir, folder), next)
		if err != nil {
			return fmt.Errorf("%s: %w", folder, err)
		}
		plans[d] = step
		changed = changed || len(step.Statements) > 0
	}
	if !changed {
		// A hand-written step (one that moves data) needs its checksum
		// in atlas.sum too; with nothing else to write, the sums are
		// written again, unchanged when no step was added.
		for _, folder := range db.MigrationDialects {
			if err := schemagen.WriteSum(filepath.Join(dir, folder)); err != nil {
				return fmt.Errorf("%s: %w", folder, err)
			}
		}
		return nil
	}
	name := stepName(plans)
	for d, folder := range db.MigrationDialects {
		if err := plans[d].Write(filepath.Join(dir, folder), name); err != nil {
			return fmt.Errorf("%s: %w", folder, err)
		}
	}
	fmt.Printf("migrationgen: wrote migration step %s for every database\n", name)
	return nil
}

// nextVersion is one more than the highest step of any database.
func nextVersion(dir string) (int, error) {
	last := 0
	for _, folder := range db.MigrationDialects {
		names, err := filepath.Glob(filepath.Join(dir, folder, "*.sql"))
		if err != nil {
			return 0, err
		}
		for _, n := range names {
			v, _, _ := strings.Cut(filepath.Base(n), "_")
			if i, err := strconv.Atoi(v); err == nil && i > last {
				last = i
			}
		}
	}
	return last + 1, nil
}

// stepName names a step after what it creates, or "schema".
func stepName(plans map[string]*schemagen.Step) string {
	var created []string
	for _, p := range plans {
		created = append(created, p.Created...)
	}
	sort.Strings(created)
	desc := "schema"
	if len(created) > 0 {
		desc = "add_" + strings.TrimPrefix(created[0], "personnel_")
	}
	return fmt.Sprintf("%04d_%s", plans[firstKey(plans)].Version, desc)
}

func firstKey(m map[string]*schemagen.Step) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}
