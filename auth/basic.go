package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
)

// basicTTL is how long a successful HTTP Basic check is remembered: a
// client sending Basic on every request pays bcrypt about once a minute.
const basicTTL = 60 * time.Second

// Messages of DRF's BasicAuthentication.
const (
	msgBadBasicHeader  = "Invalid basic header. Credentials not correctly base64 encoded."
	msgBadBasicCredits = "Invalid username/password."
)

// basicEntry is a remembered successful check of a username and password.
type basicEntry struct {
	userID  int
	cred    credState // the user's credentials when checked
	expires time.Time
}

// basicCache remembers successful Basic checks by a keyed hash of the
// credentials: HMAC-SHA256 under a random key of this process, so neither
// the password nor anything a guess could be tested against offline is
// kept. Only successes are stored, under the hash of the very password
// that succeeded, so a wrong password can never be answered from it.
type basicCache struct {
	key  [32]byte
	macs sync.Pool // of HMACs under key: keying one costs more than using it
	mu   sync.RWMutex
	m    map[[32]byte]basicEntry
}

func newBasicCache() (*basicCache, error) {
	bc := &basicCache{m: map[[32]byte]basicEntry{}}
	if _, err := rand.Read(bc.key[:]); err != nil {
		return nil, err
	}
	bc.macs.New = func() any { return hmac.New(sha256.New, bc.key[:]) }
	return bc, nil
}

// id is the keyed hash of a username and password.
func (bc *basicCache) id(username, password string) [32]byte {
	m := bc.macs.Get().(hash.Hash)
	defer bc.macs.Put(m)
	m.Reset()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(username)))
	m.Write(n[:])
	m.Write([]byte(username))
	m.Write([]byte(password))
	var out [32]byte
	m.Sum(out[:0])
	return out
}

func (bc *basicCache) get(id [32]byte) (basicEntry, bool) {
	bc.mu.RLock()
	defer bc.mu.RUnlock()
	e, ok := bc.m[id]
	return e, ok
}

func (bc *basicCache) put(id [32]byte, e basicEntry) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if len(bc.m) >= maxVerifiedTokens {
		clear(bc.m)
	}
	bc.m[id] = e
}

func (bc *basicCache) drop(id [32]byte) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	delete(bc.m, id)
}

// basicUser checks "Authorization: Basic <encoded>" and returns the
// user's state. A check remembered within basicTTL is good while the
// user's credentials are unchanged (the user cache notices a password
// change, disable or delete within its lifetime); otherwise the password
// goes through the same throttled check as every login, and a wrong one is
// a 401 counted by the throttle.
func (s *Service) basicUser(c *gin.Context, encoded string) (userState, error) {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return userState{}, apierror.New(apierror.Unauthorized, msgBadBasicHeader)
	}
	username, password, ok := strings.Cut(string(raw), ":")
	if !ok {
		return userState{}, apierror.New(apierror.Unauthorized, msgBadBasicHeader)
	}
	ctx := c.Request.Context()
	id := s.basic.id(username, password)
	now := s.clock()
	if e, ok := s.basic.get(id); ok && now.Before(e.expires) {
		st, err := s.users.get(ctx, e.userID, tokenLogin{gen: noGen})
		if err != nil {
			return userState{}, storeError(err)
		}
		if st.exists && st.active && st.cred == e.cred {
			return st, nil
		}
		s.basic.drop(id)
	}
	if strings.TrimSpace(username) == "" || strings.TrimSpace(password) == "" {
		return userState{}, apierror.New(apierror.Unauthorized, msgBadBasicCredits)
	}
	u, err := s.checkPassword(c, username, password)
	if errors.Is(err, errBadCredentials) {
		return userState{}, apierror.New(apierror.Unauthorized, msgBadBasicCredits)
	}
	if err != nil {
		return userState{}, err
	}
	st := stateOf(u, now)
	s.basic.put(id, basicEntry{userID: u.ID, cred: st.cred, expires: now.Add(basicTTL)})
	return st, nil
}
