package auth

import (
	"context"
	"time"
	"unicode/utf8"

	"personnel/db"
	"personnel/ent"
	"personnel/ent/loginfailure"
	"personnel/ent/schema"
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

// userSubject is the key of a username's failures: the normalised name,
// so that every spelling that logs in as one user counts against it, cut
// to a username's length and to the column's 200 bytes, at a character
// boundary (half a character is not UTF-8, which MySQL refuses to store).
func userSubject(name string) string {
	const prefix = "user:"
	return prefix + cut(NormaliseUsername(name), schema.MaxUsername, 200-len(prefix))
}

// cut returns the longest prefix of s with at most maxRunes characters and
// maxBytes bytes that ends on a character boundary.
func cut(s string, maxRunes, maxBytes int) string {
	for i, n := 0, 0; i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		if n == maxRunes || i+size > maxBytes {
			return s[:i]
		}
		i += size
	}
	return s
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
