package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/dialect/sql/schema"

	"personnel/config"
)

// migrateLockWait is how long a replica waits for another one's migration.
const migrateLockWait = 120 // seconds

// migrateMu serialises migrations within the process: ent's migrator
// writes to its package-global table definitions while it runs.
var migrateMu sync.Mutex

// Migrate creates or updates the schema to match the compiled entities.
// On MySQL and PostgreSQL it holds an advisory lock meanwhile, so replicas
// that start together migrate one after the other instead of racing on DDL.
func (d *DB) Migrate(ctx context.Context) error {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	opts := []schema.MigrateOption{}
	if d.MySQL() {
		coll, err := d.binaryCollation()
		if err != nil {
			return err
		}
		opts = append(opts, schema.WithHooks(withCollation(coll)))
		conn, err := d.writeDB.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		var got stdsql.NullInt64
		err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('personnel.migrate.', DATABASE()), ?)", migrateLockWait).Scan(&got)
		if err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("another replica held the migration lock for over %d seconds", migrateLockWait)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(CONCAT('personnel.migrate.', DATABASE()))")
	} else if d.Postgres() {
		opts = append(opts, schema.WithHooks(withCCollation()))
		release, err := d.lockPostgresMigration(ctx)
		if err != nil {
			return err
		}
		defer release()
	}
	existed, err := d.existingTables(ctx)
	if err != nil {
		return fmt.Errorf("listing the tables: %w", err)
	}
	if err := d.write.Schema.Create(ctx, opts...); err != nil {
		return fmt.Errorf("migrating the schema: %w", err)
	}
	if err := d.reconcileCounts(ctx, existed, false); err != nil {
		return err
	}
	if err := d.fillUsernameKeys(ctx); err != nil {
		return err
	}
	if err := d.ensureCountTriggers(ctx); err != nil {
		return err
	}
	if err := d.dropFullTextIndexes(ctx); err != nil {
		return err
	}
	return d.ensureStructures(ctx, existed)
}

// binaryCollation picks the collation for every text column on MySQL and
// MariaDB: binary, so exact filters are case-sensitive and ordering is by
// code point as on SQLite, and NO PAD, so 'HR' and 'HR ' differ as they do
// on SQLite (utf8mb4_bin, ent's default, ignores trailing spaces).
//
// The choice follows the server detected, not a forced flavour: MariaDB
// with PERSONNEL_DB_FLAVOR=tidb still needs MariaDB's collation. TiDB
// reports a MySQL 8 version and has utf8mb4_0900_bin, NO PAD as on MySQL
// (its utf8mb4_bin is PAD SPACE, and it has no utf8mb4_nopad_bin).
func (d *DB) binaryCollation() (string, error) {
	if d.server == config.FlavorMariaDB {
		return "utf8mb4_nopad_bin", nil // MariaDB 10.2 and later
	}
	major, _, _ := strings.Cut(d.Version, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 8 {
		return "", errors.New("MySQL 8.0 or later is required (for the utf8mb4_0900_bin collation)")
	}
	return "utf8mb4_0900_bin", nil
}

// withCollation sets the table collation of every table. It works on copies
// because ent's table definitions are package globals shared by every
// database this process opens.
func withCollation(collation string) schema.Hook {
	return func(next schema.Creator) schema.Creator {
		return schema.CreateFunc(func(ctx context.Context, tables ...*schema.Table) error {
			copies := make([]*schema.Table, len(tables))
			for i, t := range tables {
				c := *t
				ann := entsql.Annotation{}
				if t.Annotation != nil {
					ann = *t.Annotation
				}
				ann.Charset, ann.Collation = "utf8mb4", collation
				c.Annotation = &ann
				copies[i] = &c
			}
			return next.Create(ctx, copies...)
		})
	}
}
