package auth

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"personnel/db"
	"personnel/ent"
)

// userTTL is how long a replica trusts what it read about a user. A user
// deleted or disabled (or whose password changed) on any replica is refused
// everywhere within this time plus one request, which keeps the contract's
// five seconds without a database round trip on every request.
const userTTL = 4 * time.Second

// userState is what a request needs to know about the user of its token.
type userState struct {
	id         int
	exists     bool
	active     bool
	username   string
	role       string
	generation int64 // tokens of another generation are void
	validAfter int64 // unix seconds; tokens without a generation whose orig_iat is earlier are void
	cred       credState
	fetched    time.Time
}

// stateOf is the state of u as read at now.
func stateOf(u *ent.User, now time.Time) userState {
	return userState{id: u.ID, exists: true, active: u.Active, username: u.Username, role: string(u.Role),
		generation: u.TokenGeneration, validAfter: u.TokensValidAfter.Unix(), cred: credStateOf(u), fetched: now}
}

// userCache remembers user states for userTTL, loading each at most once at
// a time however many requests ask.
type userCache struct {
	db    *db.DB
	clock func() time.Time
	mu    sync.Mutex
	m     map[int]userState
	group singleflight.Group
}

func newUserCache(d *db.DB, clock func() time.Time) *userCache {
	return &userCache{db: d, clock: clock, m: map[int]userState{}}
}

// get returns the state of user id, for a token of login. A remembered
// state older than the login (login.after) is out of date whatever its age,
// so it is read again: else a token from a login just after a password
// change would be refused until the state expired.
func (uc *userCache) get(ctx context.Context, id int, login tokenLogin) (userState, error) {
	now := uc.clock()
	uc.mu.Lock()
	st, ok := uc.m[id]
	uc.mu.Unlock()
	if ok && now.Sub(st.fetched) < userTTL && !now.Before(st.fetched) && !login.after(st) {
		return st, nil
	}
	st, err := uc.load(ctx, id, now)
	if err == nil && st.exists && login.after(st) {
		// A load that began before the change was shared with this
		// request; one more read sees it.
		st, err = uc.load(ctx, id, now)
	}
	return st, err
}

// load reads user id, once however many requests ask at a time.
func (uc *userCache) load(ctx context.Context, id int, now time.Time) (userState, error) {
	v, err, _ := uc.group.Do(strconv.Itoa(id), func() (any, error) {
		// The load is shared by every waiting request, so one of them
		// going away must not cancel it for the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		u, err := uc.db.Read().User.Get(ctx, id)
		st := userState{fetched: now}
		switch {
		case ent.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			st = stateOf(u, now)
		}
		uc.mu.Lock()
		if len(uc.m) > 10000 { // a bound, not an eviction policy: users are few
			clear(uc.m)
		}
		uc.m[id] = st
		uc.mu.Unlock()
		return st, nil
	})
	if err != nil {
		return userState{}, err
	}
	return v.(userState), nil
}

// maxVerifiedTokens bounds the verified-token cache; past it the cache
// starts over, which only costs re-verifying.
const maxVerifiedTokens = 10000

// verifiedToken is what a request needs from a token already verified.
type verifiedToken struct {
	login tokenLogin
	exp   int64
}

// tokenCache remembers tokens whose signature and algorithm were checked.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]verifiedToken
}

func (tc *tokenCache) get(token string) (verifiedToken, bool) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	v, ok := tc.m[token]
	return v, ok
}

func (tc *tokenCache) put(token string, v verifiedToken) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.m) >= maxVerifiedTokens {
		clear(tc.m)
	}
	tc.m[token] = v
}
