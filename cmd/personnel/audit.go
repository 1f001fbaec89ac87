package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"personnel/db"
)

// auditCommand runs `personnel audit`: it prints the audit trail, newest
// first, or with `prune` deletes the entries older than
// PERSONNEL_AUDIT_RETENTION, as the running service does now and then.
func auditCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "prune" {
		cfg, err := loadConfig("audit prune", "Delete the audit entries older than PERSONNEL_AUDIT_RETENTION.", args[1:], stdout, stderr)
		if err != nil {
			return err
		}
		if cfg.AuditRetention <= 0 {
			return usagef("audit prune: PERSONNEL_AUDIT_RETENTION is not set: entries are kept for ever")
		}
		d, err := openDB(context.Background(), cfg)
		if err != nil {
			return err
		}
		defer d.Close()
		n, err := d.PruneAudit(context.Background(), cfg.AuditRetention)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pruned %d audit entries older than %s\n", n, cfg.AuditRetention)
		return nil
	}
	fs := newFlagSet("audit", "audit [--resource R] [--record ID] [--since T] [--limit N] [-config file.yaml]\n"+
		"       personnel audit prune [-config file.yaml]\n\n"+
		"Print the audit trail, newest first: when, who, what, which record, and what changed.\n", args, stdout, stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	resource := fs.String("resource", "", "only this resource (its name: department)")
	recordID := fs.Int64("record", 0, "only this record id (with --resource)")
	since := fs.String("since", "", "only entries at or after this time (RFC 3339, or a date YYYY-MM-DD)")
	limit := fs.Int("limit", 100, "most entries to print")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f := db.AuditFilter{Resource: *resource, RecordID: *recordID}
	if *since != "" {
		t, err := time.Parse(time.RFC3339Nano, *since)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, *since); err != nil {
				return usagef("audit: --since %q is neither RFC 3339 nor YYYY-MM-DD", *since)
			}
		}
		f.AtGTE = t
	}
	if *limit < 1 {
		return usagef("audit: --limit must be at least 1")
	}
	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	d, err := openDB(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	entries, total, err := d.Audit(context.Background(), f, *limit, 0)
	if err != nil {
		return err
	}
	for _, e := range entries {
		who := e.Actor.Username
		if e.Actor.Command != "" {
			who = "cli:" + e.Actor.Command
		}
		if who == "" {
			who = "-"
		}
		fmt.Fprintf(stdout, "%s  %-16s %-6s %s %s  %s\n", e.At.Format("2006-01-02T15:04:05.000000Z"), who, e.Action,
			e.Resource, strconv.FormatInt(e.RecordID, 10), e.Changes)
	}
	if total > len(entries) {
		fmt.Fprintf(stdout, "(%d of %d entries; --limit shows more)\n", len(entries), total)
	}
	return nil
}
