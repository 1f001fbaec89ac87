// Package auth puts authentication in front of the API, with the three
// schemes of the Django REST Framework service it replaces, each of which
// can be switched off (PERSONNEL_AUTH_SCHEMES):
//
//   - JWT, with appleboy/gin-jwt: POST /jwt-api-token-auth/ trades a
//     username and password for a token, POST /jwt-api-token-refresh/ a
//     token for a newer one, POST /jwt-api-token-verify/ checks one; API
//     requests carry "Authorization: JWT <token>" (or Bearer);
//   - API keys (DRF's authtoken): POST /api-token-auth/ answers the user's
//     key, sent as "Authorization: Token <key>" (token.go);
//   - HTTP Basic on any request, its successful checks remembered for a
//     minute (basic.go).
//
// Scheme words match in any letter case. Every password check of every
// scheme goes through one throttled, bounded check (login.go). Users live
// in the database with bcrypt hashes; editors may write, viewers only read.
//
// gin-jwt differs from the contract in several places, each handled here:
// its header scheme is one case-sensitive word (normalised before it
// looks), its error bodies and statuses are its own (every error goes
// through apierror instead), and its refresh resets the refresh window on
// every refresh and reads the token from a header (refresh is ours, and
// keeps the window measured from the original login).
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	jwt "github.com/appleboy/gin-jwt/v2"
	"github.com/gin-gonic/gin"
	gojwt "github.com/golang-jwt/jwt/v4"
	"golang.org/x/crypto/bcrypt"

	"personnel/apierror"
	"personnel/config"
	"personnel/db"
	"personnel/ent"
	"personnel/jsonbody"
)

// Paths of the JWT endpoints.
const (
	LoginPath   = "/jwt-api-token-auth"
	RefreshPath = "/jwt-api-token-refresh"
	VerifyPath  = "/jwt-api-token-verify"
)

// Authentication schemes, as PERSONNEL_AUTH_SCHEMES names them.
const (
	SchemeJWT   = "jwt"
	SchemeToken = "token"
	SchemeBasic = "basic"
)

// challenges are the WWW-Authenticate challenges of the schemes, in the
// order a 401 lists them: JWT first, as the contract says.
var challenges = []struct{ scheme, challenge string }{
	{SchemeJWT, `JWT realm="api"`},
	{SchemeToken, "Token"},
	{SchemeBasic, `Basic realm="api"`},
}

// Claims in a token.
const (
	claimUserID   = "user_id"
	claimUsername = "username"
	claimOrigIat  = "orig_iat" // the original login: refresh is measured from it
	claimExp      = "exp"
)

// Messages of the contract and of djangorestframework-jwt.
const (
	msgBadCredentials = "Unable to log in with provided credentials."
	msgNoCredentials  = "Authentication credentials were not provided."
	msgBadHeader      = `Invalid Authorization header; send "Authorization: JWT <token>", "Token <key>" or "Basic <credentials>".`
	msgExpired        = "Signature has expired."
	msgInvalid        = "Error decoding signature."
	msgRefreshExpired = "Refresh has expired."
	msgUserGone       = "The user of this token no longer exists, is disabled, or changed password; log in again."
	msgForbidden      = "You do not have permission to perform this action."
)

// Hasher compares passwords with bcrypt hashes; tests count its calls.
type Hasher interface {
	Compare(hash []byte, password string) error
}

type bcryptHasher struct{}

func (bcryptHasher) Compare(hash []byte, password string) error {
	return bcrypt.CompareHashAndPassword(hash, []byte(password))
}

// Options adjust a Service for tests.
type Options struct {
	Clock  func() time.Time // nil: time.Now; also gin-jwt's TimeFunc
	Hasher Hasher           // nil: bcrypt
}

// Service authenticates API requests.
type Service struct {
	db        *db.DB
	clock     func() time.Time
	hasher    Hasher
	dummy     []byte // a hash to compare against when the user does not exist
	secret    []byte
	method    gojwt.SigningMethod
	ttl       time.Duration
	window    time.Duration
	bodyLimit int64
	cost      int // bcrypt cost of stored hashes
	mw        *jwt.GinJWTMiddleware
	users     *userCache
	verified  *tokenCache
	keys      *keyCache
	basic     *basicCache
	throttle  *throttle
	hashing   *hashGate
	schemes   map[string]bool // enabled
}

// ctxError is where the gin-jwt callbacks hand the real error to
// unauthorized, which gets only a message from gin-jwt.
const ctxError = "personnel.auth.error"

// ctxUser holds the authenticated user's name, for logs.
const ctxUser = "personnel.auth.user"

// ctxEditor is set on the requests of an authenticated editor.
const ctxEditor = "personnel.auth.editor"

// ctxState holds the state of a user authenticated by key or Basic, for
// gate (a JWT's user is checked there from its claims).
const ctxState = "personnel.auth.state"

// ctxLogin holds the login of a JWT found in the verified-token cache, for
// gate.
const ctxLogin = "personnel.auth.login"

// New builds the authentication of cfg over d. It fails when there is no
// usable secret (see Secret).
func New(cfg *config.Config, d *db.DB, opts Options) (*Service, error) {
	secret, err := Secret(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Hasher == nil {
		opts.Hasher = bcryptHasher{}
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("not anyone's password"), cfg.BcryptCost)
	if err != nil {
		return nil, err
	}
	basic, err := newBasicCache()
	if err != nil {
		return nil, err
	}
	s := &Service{
		db: d, clock: opts.Clock, hasher: opts.Hasher, dummy: dummy, secret: secret,
		method: gojwt.GetSigningMethod(cfg.JWTAlgorithm), ttl: cfg.JWTTTL, window: cfg.JWTRefreshWindow,
		bodyLimit: cfg.BodyLimit,
		cost:      cfg.BcryptCost,
		users:     newUserCache(d, opts.Clock),
		verified:  &tokenCache{m: map[string]verifiedToken{}},
		keys:      &keyCache{m: map[string]keyEntry{}},
		basic:     basic,
		throttle: &throttle{db: d, clock: opts.Clock, perUser: cfg.LoginFailuresUser,
			perAddr: cfg.LoginFailuresAddr, window: cfg.LoginFailureWindow},
		hashing: newHashGate(),
		schemes: map[string]bool{},
	}
	for _, sc := range cfg.AuthSchemes {
		s.schemes[sc] = true
	}
	if s.method == nil {
		return nil, fmt.Errorf("PERSONNEL_JWT_ALGORITHM: unknown algorithm %q", cfg.JWTAlgorithm)
	}
	s.mw, err = jwt.New(&jwt.GinJWTMiddleware{
		Realm:            `"api"`,
		SigningAlgorithm: cfg.JWTAlgorithm,
		Key:              secret,
		Timeout:          cfg.JWTTTL,
		MaxRefresh:       cfg.JWTRefreshWindow,
		IdentityKey:      claimUserID,
		TokenLookup:      "header: Authorization",
		TokenHeadName:    "JWT",
		TimeFunc:         opts.Clock,
		// Only the algorithm configured is accepted ("none" included in
		// the refusal); expiry is checked by gin-jwt against TimeFunc, so
		// one clock decides.
		ParseOptions:          []gojwt.ParserOption{gojwt.WithValidMethods([]string{cfg.JWTAlgorithm}), gojwt.WithoutClaimsValidation()},
		PayloadFunc:           payload,
		HTTPStatusMessageFunc: stashError,
		Unauthorized:          s.unauthorized,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Routes registers the login and token endpoints on r, with and without
// the trailing slash. They are served whichever schemes are enabled: the
// setting says which credentials API requests may carry.
func (s *Service) Routes(r gin.IRouter) {
	for _, e := range []struct {
		path string
		h    gin.HandlerFunc
	}{{LoginPath, s.login}, {RefreshPath, s.refresh}, {VerifyPath, s.verifyToken}, {TokenLoginPath, s.tokenLogin}} {
		r.POST(e.path, e.h)
		r.POST(e.path+"/", e.h)
	}
}

// Middleware returns the handlers that authenticate an API request: find
// its user by whichever enabled scheme its Authorization header uses, then
// check that user and role.
func (s *Service) Middleware() []gin.HandlerFunc {
	return []gin.HandlerFunc{s.singleAuthorization, s.identify(s.verify(s.mw.MiddlewareFunc())), s.gate}
}

// identify authenticates by the scheme the Authorization header names (in
// any letter case): a JWT (also as Bearer) goes through byJWT, which sets
// its claims for gate; a key or Basic credentials are checked here and
// their user's state handed to gate. A scheme that is not enabled is
// refused like an unknown one.
func (s *Service) identify(byJWT gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("Authorization")
		scheme, cred := splitAuthorization(h)
		var st userState
		var err error
		switch {
		case h == "":
			err = apierror.New(apierror.Unauthorized, msgNoCredentials)
		case (scheme == SchemeJWT || scheme == "bearer") && s.schemes[SchemeJWT]:
			// The one form gin-jwt and the verified-token cache read
			// (which most clients send already).
			if len(h) != len("JWT ")+len(cred) || !strings.HasPrefix(h, "JWT ") {
				c.Request.Header.Set("Authorization", "JWT "+cred)
			}
			byJWT(c)
			return
		case scheme == SchemeToken && s.schemes[SchemeToken]:
			st, err = s.keyUser(c.Request.Context(), cred)
		case scheme == SchemeBasic && s.schemes[SchemeBasic]:
			st, err = s.basicUser(c, cred)
		default:
			err = apierror.New(apierror.Unauthorized, msgBadHeader)
		}
		if err != nil {
			s.abort(c, err)
			return
		}
		c.Set(ctxState, st)
		c.Next()
	}
}

// splitAuthorization splits an Authorization header into its scheme word,
// lowered, and its credentials, as Django REST Framework splits the header's
// bytes: on runs of spaces and tabs (HTTP's white space), never on other
// Unicode spaces such as NBSP or NEL, which are part of a word. A header
// of any other shape gives two empty strings. The scheme is lowered in
// ASCII only, so that no other character (the Kelvin sign, say) passes
// for a letter of it.
func splitAuthorization(h string) (scheme, cred string) {
	// Scanned byte by byte, which finds the same words as splitting on
	// runes: no byte of a multi-byte character is a space or a tab. Every
	// request passes here, so nothing is allocated for the usual schemes.
	var words [2]string
	n := 0
	for i := 0; i < len(h); {
		if h[i] == ' ' || h[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(h) && h[j] != ' ' && h[j] != '\t' {
			j++
		}
		if n == len(words) {
			return "", ""
		}
		words[n] = h[i:j]
		n++
		i = j
	}
	if n != 2 {
		return "", ""
	}
	return lowerASCII(words[0]), words[1]
}

// knownSchemes are the scheme words lowerASCII answers without
// allocating.
var knownSchemes = []string{SchemeJWT, "bearer", SchemeToken, SchemeBasic}

// lowerASCII lowers s's ASCII letters only.
func lowerASCII(s string) string {
	for _, k := range knownSchemes {
		if equalFoldASCII(s, k) {
			return k
		}
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// equalFoldASCII reports whether s is lower (all lower case) with its
// ASCII letters in any case.
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// verify lets gin-jwt parse and check a token the first time it is seen,
// and answers from the verified-token cache after that: checking an HMAC
// and decoding the claims on every request costs as much as reading a
// record. The cache is keyed by the whole token, signature included, so
// only a token that passed every check can hit it; expiry is still checked
// against the clock on each use, and the user's state by gate.
func (s *Service) verify(ginJWT gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		// Only a header in the one form identify leaves may use the
		// cache; anything else goes to gin-jwt to be refused.
		token, scheme := strings.CutPrefix(c.GetHeader("Authorization"), "JWT ")
		if v, ok := s.verified.get(token); scheme && ok {
			if v.exp < s.clock().Unix() {
				s.abort(c, apierror.New(apierror.Unauthorized, msgExpired))
				return
			}
			c.Set(ctxLogin, v.login) // what gate would read from the claims
			c.Next()
			return
		}
		ginJWT(c)
	}
}

// Username returns the authenticated user's name, or "".
func Username(c *gin.Context) string { return c.GetString(ctxUser) }

// CanWrite reports whether the request was authenticated as an editor.
func CanWrite(c *gin.Context) bool { return c.GetBool(ctxEditor) }

// gate refuses tokens of users that are gone, disabled or changed password
// since the login, and writes by viewers. A user authenticated by key or
// Basic was checked by identify already.
func (s *Service) gate(c *gin.Context) {
	var st userState
	if v, ok := c.Get(ctxState); ok {
		st = v.(userState)
	} else if v, ok := c.Get(ctxLogin); ok {
		var err error
		if st, err = s.allowed(c.Request.Context(), v.(tokenLogin)); err != nil {
			s.abort(c, err)
			return
		}
	} else {
		claims := jwt.ExtractClaims(c)
		login, err := loginClaims(claims)
		if err != nil {
			s.abort(c, err)
			return
		}
		tok, fresh := c.Get("JWT_TOKEN") // gin-jwt verified it just now
		if fresh {
			if err := s.checkFresh(tok.(string), claims); err != nil {
				s.abort(c, err)
				return
			}
		}
		// gin-jwt reads a fractional exp by its whole part; refresh and
		// verify refuse one, and so does every request.
		exp, ok := intClaim(claims[claimExp])
		if !ok {
			s.abort(c, apierror.New(apierror.Unauthorized, msgInvalid))
			return
		}
		st, err = s.allowed(c.Request.Context(), login)
		if err != nil {
			s.abort(c, err)
			return
		}
		if fresh {
			s.verified.put(tok.(string), verifiedToken{login: login, exp: exp})
		}
	}
	c.Set(ctxUser, st.username)
	c.Set(ctxRole, st.role)
	if st.role == RoleEditor {
		c.Set(ctxEditor, true)
	} else if isWrite(c.Request.Method) {
		s.abort(c, apierror.New(apierror.Forbidden, msgForbidden))
		return
	}
	if isWrite(c.Request.Method) {
		// Who writes, for the audit trail.
		c.Request = c.Request.WithContext(db.WithActor(c.Request.Context(), db.Actor{UserID: st.id, Username: st.username}))
	}
	c.Next()
}

// allowed returns the state of the user a token names, or an error when
// that user is gone, disabled, or changed password after the token's
// login: the one rule both the API gate and refresh apply.
func (s *Service) allowed(ctx context.Context, login tokenLogin) (userState, error) {
	st, err := s.users.get(ctx, int(login.userID), login)
	if err != nil {
		return userState{}, storeError(err)
	}
	if !st.exists || !st.active || !login.current(st) {
		return userState{}, apierror.New(apierror.Unauthorized, msgUserGone)
	}
	return st, nil
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// payload puts the user's id, name and token generation (see tokenLogin)
// in a new token; gin-jwt adds exp and orig_iat.
func payload(data any) jwt.MapClaims {
	u := data.(*ent.User)
	return jwt.MapClaims{claimUserID: u.ID, claimUsername: u.Username,
		claimGen: u.TokenGeneration, claimValidAfter: u.TokensValidAfter.Unix()}
}

// refresh answers {"token": "<jwt>"} with {"token": "<newer jwt>"}. The
// old token may have expired, but its original login must lie within the
// refresh window, and its user must still be allowed in. The new token
// keeps the original login time, so refreshing never extends the window.
// Failures are 400 with non_field_errors, as drf-jwt answers them.
func (s *Service) refresh(c *gin.Context) {
	login, st, err := s.postedToken(c, false)
	if err != nil {
		s.abort(c, err)
		return
	}
	now := s.clock()
	next := gojwt.MapClaims(login.claims())
	next[claimUsername], next[claimExp] = st.username, now.Add(s.ttl).Unix()
	signed, err := gojwt.NewWithClaims(s.method, next).SignedString(s.secret)
	if err != nil {
		s.abort(c, err)
		return
	}
	tokenResponse(c, http.StatusOK, signed, time.Time{})
}

// verifyToken answers {"token": "<jwt>"} with the same body when the token
// is valid (signed, not expired, its user still allowed in), and 400 with
// non_field_errors otherwise: drf-jwt's verify view.
func (s *Service) verifyToken(c *gin.Context) {
	if _, _, err := s.postedToken(c, true); err != nil {
		s.abort(c, err)
		return
	}
	tokenResponse(c, http.StatusOK, c.GetString(ctxPostedToken), time.Time{})
}

// ctxPostedToken holds the token a refresh or verify request posted.
const ctxPostedToken = "personnel.auth.posted"

// postedToken reads and checks the token of a refresh or verify request:
// verify wants it unexpired, refresh within the refresh window from the
// original login. Every refusal is a 400 with non_field_errors.
func (s *Service) postedToken(c *gin.Context, unexpired bool) (login tokenLogin, st userState, err error) {
	m, err := jsonbody.Object(c.Request, s.bodyLimit)
	if err != nil {
		return login, st, err
	}
	raw, msg := stringField(m, "token")
	if msg != "" {
		return login, st, apierror.Fields(apierror.FieldError{Field: "token", Msg: msg})
	}
	c.Set(ctxPostedToken, raw)
	tok, err := s.mw.ParseTokenString(raw)
	if err != nil {
		return login, st, nonField(msgInvalid, err)
	}
	claims, _ := tok.Claims.(gojwt.MapClaims)
	login, err = loginClaims(claims)
	if err != nil {
		return login, st, nonField(msgInvalid, err)
	}
	now := s.clock()
	exp, hasExp := intClaim(claims[claimExp])
	if !hasExp { // a token that never expires is not ours
		return login, st, nonField(msgInvalid, nil)
	}
	if err := checkToken(tok.Header, claims, now); err != nil {
		return login, st, nonField(apierror.As(err).Msg, err)
	}
	if unexpired {
		if exp < now.Unix() {
			return login, st, nonField(msgExpired, nil)
		}
	} else if time.Unix(login.origIat, 0).Add(s.window).Before(now) {
		return login, st, nonField(msgRefreshExpired, nil)
	}
	st, err = s.allowed(c.Request.Context(), login)
	if ae := (*apierror.Error)(nil); errors.As(err, &ae) && ae.Kind == apierror.Unauthorized {
		return login, st, nonField(ae.Msg, nil)
	}
	return login, st, err
}

// nonField is a refused refresh or verify: a 400 with non_field_errors,
// whose cause is logged.
func nonField(msg string, cause error) error {
	e := apierror.NonField(msg)
	e.Cause = cause
	return e
}

// tokenResponse answers a token. Tokens are credentials: no cache may keep
// them.
func tokenResponse(c *gin.Context, status int, token string, _ time.Time) {
	c.Header("Cache-Control", "no-store")
	body := append(apierror.AppendString([]byte(`{"token":`), token), '}')
	c.Data(status, "application/json", body)
}

// stashError keeps gin-jwt's error for unauthorized.
func stashError(err error, c *gin.Context) string {
	c.Set(ctxError, err)
	return err.Error()
}

// unauthorized renders every failure gin-jwt reports, whatever status it
// chose, through apierror: errors of ours keep their kind; gin-jwt's token
// errors become a 401 with a message of the contract.
func (s *Service) unauthorized(c *gin.Context, _ int, _ string) {
	v, _ := c.Get(ctxError)
	err, _ := v.(error)
	var ae *apierror.Error
	if !errors.As(err, &ae) {
		ae = tokenError(err)
	}
	s.abort(c, ae)
}

func tokenError(err error) *apierror.Error {
	msg := msgInvalid
	switch {
	case errors.Is(err, jwt.ErrEmptyAuthHeader):
		msg = msgNoCredentials
	case errors.Is(err, jwt.ErrInvalidAuthHeader):
		msg = msgBadHeader
	case errors.Is(err, jwt.ErrExpiredToken):
		msg = msgExpired
	}
	return apierror.Wrap(apierror.Unauthorized, msg, err)
}

// abort writes err and stops the chain. A 401 carries one challenge per
// enabled scheme, JWT first; nothing else carries any.
func (s *Service) abort(c *gin.Context, err error) {
	h := c.Writer.Header()
	h.Del("WWW-Authenticate")
	if apierror.As(err).Kind == apierror.Unauthorized {
		for _, ch := range challenges {
			if s.schemes[ch.scheme] {
				h.Add("WWW-Authenticate", ch.challenge)
			}
		}
	}
	apierror.Write(c.Request.Context(), c.Writer, err)
	c.Abort()
}

// storeError turns a database failure into a 503 when the database is
// unavailable; anything else stays internal.
func storeError(err error) error {
	if db.IsUnavailable(err) {
		return apierror.Unavailability(err)
	}
	return err
}

// stringField reads a required, non-blank JSON string member. Unlike
// codes and names, credentials are not trimmed: spaces in a password count.
func stringField(m map[string]json.RawMessage, name string) (string, string) {
	raw, ok := m[name]
	switch {
	case !ok:
		return "", "This field is required."
	case len(raw) == 0 || raw[0] != '"':
		return "", "Not a valid string."
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", "Not a valid string."
	}
	return nonBlank(v)
}

// nonBlank refuses a value of white space only.
func nonBlank(v string) (string, string) {
	if strings.TrimSpace(v) == "" {
		return "", "This field may not be blank."
	}
	return v, ""
}

// intClaim reads a numeric claim, which JSON decoding makes a float64.
func intClaim(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}
