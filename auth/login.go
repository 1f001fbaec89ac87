package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"personnel/apierror"
	"personnel/ent"
	"personnel/jsonbody"
)

// bookkeepingTimeout bounds the throttle's own database work. It is not
// the request's deadline: a request that waited for a hashing slot must
// still get its failure counted, and a client that hangs up must not take
// its attempt's record with it.
const bookkeepingTimeout = 5 * time.Second

// msgNulChar is Django REST Framework's refusal of a NUL character.
const msgNulChar = "Null characters are not allowed."

// msgBusy is the answer when every password-hashing slot is taken.
const msgBusy = "Too many passwords are being checked at the moment; try again in a second."

// hashGate bounds concurrent password hashing. bcrypt is meant to be slow:
// unbounded, a flood of logins takes every CPU, every request (logins of
// real users among them) then outlives its deadline, and nothing gets
// counted. A login is admitted before any database work only while few
// others are (the hashing ones and a short queue behind them); beyond
// that it is answered at once with 503 and Retry-After, at the cost of an
// atomic add.
type hashGate struct {
	slots    chan struct{}
	admitted atomic.Int64
	limit    int64
}

// newHashGate leaves one CPU of the process free for everything else when
// it has more than one, so requests authenticated by token are served
// during a flood of logins; eight logins may queue behind each slot.
func newHashGate() *hashGate {
	n := max(1, runtime.GOMAXPROCS(0)-1)
	return &hashGate{slots: make(chan struct{}, n), limit: int64(9 * n)}
}

// admit lets a login in, or says it must be turned away; an admitted login
// calls done when it is answered.
func (g *hashGate) admit() bool {
	if g.admitted.Add(1) > g.limit {
		g.admitted.Add(-1)
		return false
	}
	return true
}

func (g *hashGate) done() { g.admitted.Add(-1) }

// enter waits for a hashing slot; false means the request's context ended
// first.
func (g *hashGate) enter(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (g *hashGate) leave() { <-g.slots }

// checkPassword is the one password check of every scheme: the JWT login,
// the token login and HTTP Basic. It turns the attempt away at once (503
// with Retry-After) when too many are being checked, counts it with the
// throttle before hashing (429 with Retry-After when the username or the
// address is locked out), waits for a hashing slot, and costs one database
// look-up and one bcrypt comparison whether or not the user exists
// (against a dummy hash when not), so the answer's timing does not tell.
// Wrong credentials, an unknown user and a disabled user are all
// errBadCredentials. Anything unexpected is an internal error (500, logged),
// never a refusal. The throttle's own database work runs outside the
// request's deadline, so waiting for a slot cannot keep a failure from
// being counted.
func (s *Service) checkPassword(c *gin.Context, username, password string) (*ent.User, error) {
	ctx := c.Request.Context()
	if checkPasswordForm(password) != nil {
		// No user can have it (over bcrypt's 72 bytes, say): refused
		// without comparing, which would compare only a prefix.
		return nil, errBadCredentials
	}
	if !s.hashing.admit() {
		return nil, apierror.New(apierror.Unavailable, msgBusy)
	}
	defer s.hashing.done()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	at, wait, err := s.throttle.begin(bctx, username, c.ClientIP())
	if err != nil {
		return nil, storeError(err)
	}
	if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		c.Header("Retry-After", strconv.Itoa(secs))
		return nil, apierror.New(apierror.TooManyRequests,
			fmt.Sprintf("Too many failed logins; try again in %d seconds.", secs))
	}
	var u *ent.User
	err = ErrUserNotFound
	if possibleUsername(username) {
		// No user has any other name, and PostgreSQL refuses to compare
		// one (a 500): it is an unknown user, at an unknown user's cost.
		u, err = findUser(ctx, s.db.Read(), username, false)
	}
	hash := s.dummy
	switch {
	case err == nil:
		hash = []byte(u.PasswordHash)
	case !errors.Is(err, ErrUserNotFound):
		s.forgive(bctx, at)
		return nil, storeError(err)
	}
	if !s.hashing.enter(ctx) {
		s.forgive(bctx, at)
		return nil, apierror.New(apierror.Unavailable, msgBusy)
	}
	cerr := s.hasher.Compare(hash, password)
	if err == nil && cerr == nil && u.Active {
		// Django's rule: a hash of another cost than the configured one
		// is made again, in the same hashing slot, so every user costs
		// what an unknown name costs.
		if uerr := upgradeHash(ctx, s.db, u, password, s.cost); uerr != nil {
			slog.WarnContext(ctx, "storing a password hash at the configured cost", "user", u.Username, "error", uerr)
		}
	} else if err == nil && errors.Is(cerr, bcrypt.ErrMismatchedHashAndPassword) {
		s.hardenRuntime(hash, password)
	}
	s.hashing.leave()
	if cerr != nil && !errors.Is(cerr, bcrypt.ErrMismatchedHashAndPassword) {
		// A stored hash bcrypt cannot read: the server's fault, not a
		// wrong guess.
		s.forgive(bctx, at)
		return nil, fmt.Errorf("checking the password of %q: %w", username, cerr)
	}
	if err != nil || cerr != nil || !u.Active {
		if ferr := s.throttle.fail(bctx); ferr != nil {
			// The attempt is counted already; only aging out failed.
			slog.WarnContext(ctx, "login throttle: aging out failures", "error", ferr)
		}
		return nil, errBadCredentials
	}
	if serr := s.throttle.succeed(bctx, at, username); serr != nil {
		// The user proved the password; a failed clean-up must not undo
		// that, it only leaves this attempt counted until it ages out.
		slog.WarnContext(ctx, "login throttle: forgiving a successful login", "error", serr)
	}
	return u, nil
}

// hardenRuntime makes a refused password of a user whose hash is cheaper
// than the configured cost take as long as a refusal of an unknown name,
// which is compared with a hash at the configured cost; otherwise timing
// would tell which users have not logged in since the cost was raised.
// As Django's harden_runtime does, it compares the password with the
// user's hash again until the comparisons add up to one at the configured
// cost (each step of cost doubles the work): 2^(configured-stored) - 1
// more. A dearer hash cannot be made cheaper to refuse.
func (s *Service) hardenRuntime(hash []byte, password string) {
	cost, err := bcrypt.Cost(hash)
	if err != nil || cost >= s.cost {
		return
	}
	for range 1<<(s.cost-cost) - 1 {
		_ = s.hasher.Compare(hash, password) // known to be wrong: only the time counts
	}
}

// possibleUsername reports whether some user could have name: valid UTF-8
// without NUL characters, as AddUser requires.
func possibleUsername(name string) bool {
	return utf8.ValidString(name) && !strings.ContainsRune(name, 0)
}

// errBadCredentials is the one answer to wrong credentials, at every login
// endpoint (HTTP Basic answers 401 instead).
var errBadCredentials = apierror.NonField(msgBadCredentials)

// forgive uncounts an attempt that was never checked; a failure to do so
// is logged, and only leaves the attempt counted until it ages out.
func (s *Service) forgive(ctx context.Context, at attempt) {
	if err := s.throttle.forgive(ctx, at); err != nil {
		slog.WarnContext(ctx, "login throttle: forgiving an unchecked attempt", "error", err)
	}
}

// login answers POST /jwt-api-token-auth/: a JWT for a username and
// password.
func (s *Service) login(c *gin.Context) {
	u, err := s.credentialsLogin(c)
	if err != nil {
		s.abort(c, err)
		return
	}
	token, _, err := s.mw.TokenGenerator(u)
	if err != nil {
		s.abort(c, err)
		return
	}
	tokenResponse(c, http.StatusOK, token, time.Time{})
}

// credentialsLogin reads the credentials of a login request and checks
// them.
func (s *Service) credentialsLogin(c *gin.Context) (*ent.User, error) {
	cr, err := s.readCredentials(c)
	if err != nil {
		return nil, err
	}
	return s.checkPassword(c, cr.username, cr.password)
}

// credentials is a validated login body.
type credentials struct{ username, password string }

// readCredentials validates a login body: {"username": "...", "password":
// "..."} as JSON, or the same two fields form-urlencoded or multipart, as
// DRF's login views accept.
func (s *Service) readCredentials(c *gin.Context) (credentials, error) {
	field, err := s.loginFields(c.Request)
	if err != nil {
		return credentials{}, err
	}
	var cr credentials
	var errs []apierror.FieldError
	for _, f := range []struct {
		name string
		dst  *string
	}{{"username", &cr.username}, {"password", &cr.password}} {
		v, msg := field(f.name)
		if msg == "" && strings.ContainsRune(v, 0) {
			msg = msgNulChar // DRF's CharField refuses it so
		}
		if msg != "" {
			errs = append(errs, apierror.FieldError{Field: f.name, Msg: msg})
		}
		*f.dst = v
	}
	if len(errs) > 0 {
		return credentials{}, apierror.Fields(errs...)
	}
	return cr, nil
}

// loginFields returns a reader of the body's required string fields.
func (s *Service) loginFields(r *http.Request) (func(name string) (string, string), error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data":
		var err error
		if mt == "multipart/form-data" {
			err = r.ParseMultipartForm(s.bodyLimit)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return nil, apierror.New(apierror.TooLarge, fmt.Sprintf("The request body is larger than %d bytes.", s.bodyLimit))
			}
			return nil, apierror.Wrap(apierror.Invalid, "The form in the request body could not be read.", err)
		}
		return func(name string) (string, string) {
			vs, ok := r.PostForm[name]
			if !ok || len(vs) == 0 {
				return "", "This field is required."
			}
			return nonBlank(vs[len(vs)-1])
		}, nil
	}
	m, err := jsonbody.Object(r, s.bodyLimit)
	if err != nil {
		return nil, err
	}
	return func(name string) (string, string) { return stringField(m, name) }, nil
}
