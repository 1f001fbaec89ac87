package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
	"personnel/ent"
	"personnel/ent/authtoken"
)

// TokenLoginPath is where DRF-style API keys are issued.
const TokenLoginPath = "/api-token-auth"

// keyLen is the length of an API key: 40 lower-case hex digits, like DRF's.
const keyLen = 40

// Messages of DRF's TokenAuthentication.
const (
	msgInvalidKey  = "Invalid token."
	msgKeyUserGone = "User inactive or deleted."
)

// credState is what a user's credentials are at a moment: their token
// generation, which moves on every password change and disable, and when
// their tokens last became valid (which an earlier version moves alone). A
// key, or a remembered Basic check, is good only while it is unchanged, so
// a password change or a disable voids both within the user cache's
// lifetime; a rehash of the same password at another cost does not.
type credState struct {
	generation int64
	validAfter int64 // Unix nanoseconds of tokens_valid_after
}

// credStateOf reads the credential state of u; the login and the user
// cache both use it, so they cannot disagree.
func credStateOf(u *ent.User) credState {
	return credState{generation: u.TokenGeneration, validAfter: u.TokensValidAfter.UnixNano()}
}

// deriveKey returns a user's API key: HMAC-SHA256 under the server secret
// of the user's id, the random salt of their key row and their credential
// state, as 40 lower-case hex digits (160 bits).
//
// Why derived: DRF answers the same key at every login while it is valid
// (scripts sharing an account must not log each other out), so the login
// must be able to produce the key again; yet a copy of the database must
// not yield a working key. A random key stored in clear fails the second,
// one stored only as a hash fails the first. Derived from a stored random
// salt under the secret, which is not in the database, the key can be
// recomputed by the service and by nobody holding only the database; the
// row keeps the salt and a SHA-256 of the key, by which a presented key is
// found with one indexed look-up. The credential state in the derivation
// voids the key when the password changes or the user is disabled (it
// moves the token generation) without anyone touching the row, and the next
// login answers the new key; deleting the row (revoke-token) or the user
// voids it for good. Rotating the secret voids every key, as it voids
// every JWT.
func (s *Service) deriveKey(userID int, salt string, cs credState) string {
	m := hmac.New(sha256.New, s.secret)
	var buf [8]byte
	m.Write([]byte("personnel api key v1\x00"))
	binary.BigEndian.PutUint64(buf[:], uint64(userID))
	m.Write(buf[:])
	m.Write([]byte(salt))
	m.Write([]byte{0})
	binary.BigEndian.PutUint64(buf[:], uint64(cs.validAfter))
	m.Write(buf[:])
	binary.BigEndian.PutUint64(buf[:], uint64(cs.generation))
	m.Write(buf[:])
	return hex.EncodeToString(m.Sum(nil))[:keyLen]
}

// keyHash is what the database keeps of a key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// tokenLogin answers POST /api-token-auth/: the user's API key for a
// username and password, the same one at each login while it is valid.
func (s *Service) tokenLogin(c *gin.Context) {
	u, err := s.credentialsLogin(c)
	if err != nil {
		s.abort(c, err)
		return
	}
	key, err := s.issueKey(c.Request.Context(), u)
	if err != nil {
		s.abort(c, err)
		return
	}
	tokenResponse(c, http.StatusOK, key, time.Time{})
}

// issueKey returns u's key, creating its row on the first login and
// pointing the row at the new key after the credentials changed.
func (s *Service) issueKey(ctx context.Context, u *ent.User) (string, error) {
	cs := credStateOf(u)
	for range 2 { // a second pass when a concurrent login created the row
		row, err := s.db.Read().AuthToken.Query().Where(authtoken.UserID(u.ID)).Only(ctx)
		switch {
		case ent.IsNotFound(err):
			var raw [16]byte
			if _, err := rand.Read(raw[:]); err != nil {
				return "", err
			}
			salt := hex.EncodeToString(raw[:])
			key := s.deriveKey(u.ID, salt, cs)
			err := s.db.Write().AuthToken.Create().SetUserID(u.ID).SetSalt(salt).SetKeyHash(keyHash(key)).Exec(ctx)
			switch {
			case db.IsUniqueViolation(err):
				continue
			case db.IsForeignKeyViolation(err): // deleted since the password check
				return "", errBadCredentials
			case err != nil:
				return "", storeError(err)
			}
			return key, nil
		case err != nil:
			return "", storeError(err)
		}
		key := s.deriveKey(u.ID, row.Salt, cs)
		if h := keyHash(key); h != row.KeyHash {
			if err := s.db.Write().AuthToken.UpdateOneID(row.ID).SetKeyHash(h).Exec(ctx); err != nil && !ent.IsNotFound(err) {
				return "", storeError(err)
			}
		}
		return key, nil
	}
	return "", apierror.Unavailability(context.DeadlineExceeded)
}

// keyEntry is what a replica remembers of a key it found in the database.
type keyEntry struct {
	userID  int
	salt    string
	fetched time.Time
	// checked is the credential state the key was last found to match.
	checked credState
	ok      bool
}

// keyCache remembers keys found in the database for userTTL, by the hash
// of the key, so a key costs one indexed look-up every few seconds instead
// of one per request, and a revoked key is refused everywhere within the
// same bound as a revoked JWT. Keys that are not found are not remembered:
// a client cannot fill the cache with guesses.
type keyCache struct {
	mu sync.RWMutex
	m  map[string]keyEntry
}

func (kc *keyCache) get(h string) (keyEntry, bool) {
	kc.mu.RLock()
	defer kc.mu.RUnlock()
	e, ok := kc.m[h]
	return e, ok
}

func (kc *keyCache) put(h string, e keyEntry) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	if len(kc.m) >= maxVerifiedTokens {
		clear(kc.m)
	}
	kc.m[h] = e
}

// keyUser returns the state of the user whose key this is, or a 401.
func (s *Service) keyUser(ctx context.Context, key string) (userState, error) {
	if !isKey(key) {
		return userState{}, apierror.New(apierror.Unauthorized, msgInvalidKey)
	}
	h := keyHash(key)
	now := s.clock()
	e, ok := s.keys.get(h)
	if !ok || now.Sub(e.fetched) >= userTTL || now.Before(e.fetched) {
		row, err := s.db.Read().AuthToken.Query().Where(authtoken.KeyHash(h)).Only(ctx)
		switch {
		case ent.IsNotFound(err):
			return userState{}, apierror.New(apierror.Unauthorized, msgInvalidKey)
		case err != nil:
			return userState{}, storeError(err)
		}
		e = keyEntry{userID: row.UserID, salt: row.Salt, fetched: now}
	}
	st, err := s.users.get(ctx, e.userID, tokenLogin{gen: noGen})
	if err != nil {
		return userState{}, storeError(err)
	}
	if !st.exists || !st.active {
		return userState{}, apierror.New(apierror.Unauthorized, msgKeyUserGone)
	}
	if !e.ok || e.checked != st.cred {
		// Deriving costs one HMAC; it is done again only when the
		// user's credentials changed.
		e.ok = subtle.ConstantTimeCompare([]byte(s.deriveKey(e.userID, e.salt, st.cred)), []byte(key)) == 1
		e.checked = st.cred
		s.keys.put(h, e)
	}
	if !e.ok {
		return userState{}, apierror.New(apierror.Unauthorized, msgInvalidKey)
	}
	return st, nil
}

// isKey reports whether s has the shape of a key: 40 lower-case hex digits.
func isKey(s string) bool {
	if len(s) != keyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RevokeToken deletes the API key of the user name designates, found as
// every user command finds one (findUser: the name as typed, or its
// normalised form): it stops working on every replica within five
// seconds, and the next login issues a new one. It returns
// ErrUserNotFound when there is no such user; a user without a key is not
// an error.
func RevokeToken(ctx context.Context, d *db.DB, name string) error {
	u, err := findUser(ctx, d.Read(), name, false)
	if err != nil {
		return err
	}
	_, err = d.Write().AuthToken.Delete().Where(authtoken.UserID(u.ID)).Exec(ctx)
	return err
}
