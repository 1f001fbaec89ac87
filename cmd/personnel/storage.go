package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"personnel/db"
	"personnel/server"
)

// storageCommand runs `personnel storage`: the space each resource and
// each structure kept beside it take in the database, in bytes and per
// record, and the audit trail's and the change feed's per entry.
func storageCommand(args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("storage", "Print the space each resource, each structure kept beside it, the audit trail and the change feed take.", args, stdout, stderr)
	if err != nil {
		return err
	}
	d, err := openDB(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	server.Loaders(d) // registers every compiled resource's table
	s, err := d.Storage(context.Background())
	if err != nil {
		return err
	}
	printStorage(stdout, s)
	return nil
}

// printStorage writes s as a table: one row per part of each resource,
// then the audit trail and the change feed.
func printStorage(w io.Writer, s db.Storage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "resource table\tpart\trecords\tbytes\tbytes a record\t")
	per := func(bytes int64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(bytes)/float64(n))
	}
	for _, f := range s.Resources {
		var total int64
		for _, p := range f.Parts {
			total += p.Bytes
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t\n", f.Resource, partName(p), f.Records, p.Bytes, per(p.Bytes, f.Records))
		}
		fmt.Fprintf(tw, "%s\tall\t%d\t%d\t%s\t\n", f.Resource, f.Records, total, per(total, f.Records))
	}
	fmt.Fprintf(tw, "%s\taudit trail\t%d entries\t%d\t%s an entry\t\n", db.AuditTable, s.AuditEntries, s.Audit.Bytes, per(s.Audit.Bytes, s.AuditEntries))
	fmt.Fprintf(tw, "%s\tchange feed\t%d entries\t%d\t%s an entry\t\n", db.FeedTable, s.FeedEntries, s.Feed.Bytes, per(s.Feed.Bytes, s.FeedEntries))
	tw.Flush()
}

// partName names a part with its tables, when they are not named after it.
func partName(p db.Part) string {
	if p.Name == "table" {
		return p.Name
	}
	return p.Name + " (" + strings.Join(p.Tables, ", ") + ")"
}
