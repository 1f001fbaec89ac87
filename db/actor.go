package db

import "context"

// Actor is who makes a write, as the audit trail records it: a user of the
// API, or a command of the command line.
type Actor struct {
	UserID   int    // the user's id; 0 for a command
	Username string // the user's name
	Command  string // the command ("seed", "import"); "" for a user
}

type actorKey struct{}

// WithActor returns ctx carrying who makes the writes done with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns who makes the writes done with ctx (the zero Actor when
// nobody said).
func ActorOf(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	return a
}
