package db

// Commits returns how many batches d's SQLite writer has committed, so
// that tests can tell writes were committed together.
func Commits(d *DB) int64 { return d.group.commits.Load() }

// QueuedWrites returns how many writes wait for d's SQLite writer, so that
// tests can line writes up behind a write that holds it.
func QueuedWrites(d *DB) int { return len(d.group.queue) }
