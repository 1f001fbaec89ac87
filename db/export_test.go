package db

// QueuedWrites returns how many writes wait for d's SQLite writer, so that
// tests can line writes up behind a write that holds it.
func QueuedWrites(d *DB) int { return len(d.group.queue) }
