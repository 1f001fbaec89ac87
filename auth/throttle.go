package auth

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
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
//
// An attempt is counted before its password is checked (begin records it
// as a failure) and forgiven when the password was right or was never
// checked. Checking the count and recording the attempt happen under a
// lock of the username and of the address, so however many guesses arrive
// at once, a replica lets at most the limit of them reach the password
// check. (Replicas do not share that lock: the statements of two replicas
// may interleave, so a fleet of n replicas lets at most about n times the
// limit through at once, never an unbounded number.)
type throttle struct {
	db               *db.DB
	clock            func() time.Time
	perUser, perAddr int
	window           time.Duration
	locks            subjectLocks
}

// attempt is a login attempt counted before its password is checked: the
// ids of its failure rows, which stay unless it is forgiven.
type attempt struct{ ids []int }

// subjectLocks serialise the check-and-record of attempts per subject, on
// a fixed set of stripes (subjects are unbounded, client-chosen strings).
type subjectLocks struct {
	seed    maphash.Seed
	stripes [64]sync.Mutex
	once    sync.Once
}

// lock locks the stripes of both subjects, in a fixed order so that two
// attempts never wait for each other, and returns the unlock.
func (l *subjectLocks) lock(a, b string) func() {
	l.once.Do(func() { l.seed = maphash.MakeSeed() })
	i := maphash.String(l.seed, a) % uint64(len(l.stripes))
	j := maphash.String(l.seed, b) % uint64(len(l.stripes))
	if i > j {
		i, j = j, i
	}
	l.stripes[i].Lock()
	if j != i {
		l.stripes[j].Lock()
	}
	return func() {
		if j != i {
			l.stripes[j].Unlock()
		}
		l.stripes[i].Unlock()
	}
}

// userSubject is the key of a username's failures: the normalised name,
// so that every spelling that logs in as one user counts against it, cut
// to a username's length and to the column's 200 bytes, at a character
// boundary (half a character is not UTF-8, which MySQL refuses to store).
// Bytes that are not UTF-8 and NUL characters, which no user's name has
// and MySQL and PostgreSQL refuse to store, count as U+FFFD.
func userSubject(name string) string {
	const prefix = "user:"
	name = strings.ReplaceAll(strings.ToValidUTF8(NormaliseUsername(name), "\uFFFD"), "\x00", "\uFFFD")
	return prefix + cut(name, schema.MaxUsername, 200-len(prefix))
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

// begin counts an attempt against the username and the address before its
// password is checked, unless either is locked out: then it returns how
// long the client must wait, and counts nothing.
func (t *throttle) begin(ctx context.Context, username, addr string) (attempt, time.Duration, error) {
	defer t.locks.lock(userSubject(username), addrSubject(addr))()
	wait, err := t.wait(ctx, username, addr)
	if err != nil || wait > 0 {
		return attempt{}, wait, err
	}
	now := t.clock().UTC()
	c := t.db.Write()
	rows, err := c.LoginFailure.CreateBulk(
		c.LoginFailure.Create().SetSubject(userSubject(username)).SetAt(now),
		c.LoginFailure.Create().SetSubject(addrSubject(addr)).SetAt(now),
	).Save(ctx)
	if err != nil {
		return attempt{}, 0, err
	}
	return attempt{ids: []int{rows[0].ID, rows[1].ID}}, 0, nil
}

// fail leaves the attempt counted as a failure and ages out failures older
// than the window.
func (t *throttle) fail(ctx context.Context) error {
	_, err := t.db.Write().LoginFailure.Delete().Where(loginfailure.AtLT(t.clock().Add(-t.window))).Exec(ctx)
	return err
}

// forgive uncounts an attempt whose password was never checked.
func (t *throttle) forgive(ctx context.Context, a attempt) error {
	_, err := t.db.Write().LoginFailure.Delete().Where(loginfailure.IDIn(a.ids...)).Exec(ctx)
	return err
}

// succeed uncounts the attempt and forgets the username's failures after a
// successful login. The address keeps its earlier count: one valid account
// must not reset the budget of an address that guesses at others.
func (t *throttle) succeed(ctx context.Context, a attempt, username string) error {
	_, err := t.db.Write().LoginFailure.Delete().
		Where(loginfailure.Or(loginfailure.IDIn(a.ids...), loginfailure.Subject(userSubject(username)))).Exec(ctx)
	return err
}
