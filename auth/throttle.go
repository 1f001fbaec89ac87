package auth

import (
	"context"
	"time"

	"personnel/db"
	"personnel/ent"
	"personnel/ent/loginfailure"
)

// throttle slows down password guessing: once a username or a client
// address has failed too often within the window, further attempts get 429
// until enough of those failures age out. Failures are rows in the shared
// database, so every replica counts the same attempts.
type throttle struct {
	db               *db.DB
	clock            func() time.Time
	perUser, perAddr int
	window           time.Duration
}

func userSubject(name string) string {
	if len(name) > 150 {
		name = name[:150]
	}
	return "user:" + name
}

func addrSubject(addr string) string { return "addr:" + addr }

// wait returns how long the client must wait before trying again, or 0.
func (t *throttle) wait(ctx context.Context, username, addr string) (time.Duration, error) {
	now := t.clock()
	rows, err := t.db.Read().LoginFailure.Query().
		Where(loginfailure.SubjectIn(userSubject(username), addrSubject(addr)), loginfailure.AtGT(now.Add(-t.window))).
		Order(ent.Asc(loginfailure.FieldAt)).
		All(ctx)
	if err != nil {
		return 0, err
	}
	var wait time.Duration
	count := map[string]int{}
	for _, r := range rows {
		count[r.Subject]++
	}
	limits := map[string]int{userSubject(username): t.perUser, addrSubject(addr): t.perAddr}
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.Subject]++
		// The subject may try again once its failures drop below the
		// limit: when the failure that put it over ages out.
		if n, limit := count[r.Subject], limits[r.Subject]; n >= limit && seen[r.Subject] == n-limit+1 {
			wait = max(wait, r.At.Add(t.window).Sub(now))
		}
	}
	return wait, nil
}

// fail records a failed login against the username and the address, and
// ages out failures older than the window.
func (t *throttle) fail(ctx context.Context, username, addr string) error {
	now := t.clock().UTC()
	c := t.db.Write()
	err := c.LoginFailure.CreateBulk(
		c.LoginFailure.Create().SetSubject(userSubject(username)).SetAt(now),
		c.LoginFailure.Create().SetSubject(addrSubject(addr)).SetAt(now),
	).Exec(ctx)
	if err != nil {
		return err
	}
	_, err = c.LoginFailure.Delete().Where(loginfailure.AtLT(now.Add(-t.window))).Exec(ctx)
	return err
}

// succeed forgets the username's failures after a successful login. The
// address keeps its count: one valid account must not reset the budget of
// an address that guesses at others.
func (t *throttle) succeed(ctx context.Context, username string) error {
	_, err := t.db.Write().LoginFailure.Delete().Where(loginfailure.Subject(userSubject(username))).Exec(ctx)
	return err
}
