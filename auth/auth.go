// Package auth puts JWT authentication in front of the API, with
// appleboy/gin-jwt: POST /jwt-api-token-auth/ trades a username and
// password for a token, POST /jwt-api-token-refresh/ trades a token for a
// newer one, and every API request must carry "Authorization: JWT <token>"
// (or Bearer, in any letter case). Users live in the database with bcrypt
// hashes; editors may write, viewers only read.
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
	"log/slog"
	"net/http"
	"strconv"
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

// Paths of the token endpoints.
const (
	LoginPath   = "/jwt-api-token-auth"
	RefreshPath = "/jwt-api-token-refresh"
)

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
	msgBadHeader      = `Invalid Authorization header; send "Authorization: JWT <token>".`
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
	throttle  *throttle
}

// ctxError is where the gin-jwt callbacks hand the real error to
// unauthorized, which gets only a message from gin-jwt.
const ctxError = "personnel.auth.error"

// ctxUser holds the authenticated user's name, for logs.
const ctxUser = "personnel.auth.user"

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
	s := &Service{
		db: d, clock: opts.Clock, hasher: opts.Hasher, dummy: dummy, secret: secret,
		method: gojwt.GetSigningMethod(cfg.JWTAlgorithm), ttl: cfg.JWTTTL, window: cfg.JWTRefreshWindow,
		bodyLimit: cfg.BodyLimit,
		cost:      cfg.BcryptCost,
		users:     newUserCache(d, opts.Clock),
		verified:  &tokenCache{m: map[string]verifiedToken{}},
		throttle: &throttle{db: d, clock: opts.Clock, perUser: cfg.LoginFailuresUser,
			perAddr: cfg.LoginFailuresAddr, window: cfg.LoginFailureWindow},
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
		Authenticator:         s.authenticate,
		PayloadFunc:           payload,
		LoginResponse:         tokenResponse,
		HTTPStatusMessageFunc: stashError,
		Unauthorized:          unauthorized,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Routes registers the token endpoints on r, with and without the trailing
// slash.
func (s *Service) Routes(r gin.IRouter) {
	for _, p := range []string{LoginPath, LoginPath + "/"} {
		r.POST(p, s.mw.LoginHandler)
	}
	for _, p := range []string{RefreshPath, RefreshPath + "/"} {
		r.POST(p, s.refresh)
	}
}

// Middleware returns the handlers that authenticate an API request:
// normalise the header, check the token (gin-jwt, unless this token was
// verified before), then check its user and role.
func (s *Service) Middleware() []gin.HandlerFunc {
	return []gin.HandlerFunc{singleAuthorization, normaliseScheme, s.verify(s.mw.MiddlewareFunc()), s.gate}
}

// verify lets gin-jwt parse and check a token the first time it is seen,
// and answers from the verified-token cache after that: checking an HMAC
// and decoding the claims on every request costs as much as reading a
// record. The cache is keyed by the whole token, signature included, so
// only a token that passed every check can hit it; expiry is still checked
// against the clock on each use, and the user's state by gate.
func (s *Service) verify(ginJWT gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		// Only a header in the one form normaliseScheme leaves may use the
		// cache; anything else goes to gin-jwt to be refused.
		token, scheme := strings.CutPrefix(c.GetHeader("Authorization"), "JWT ")
		if v, ok := s.verified.get(token); scheme && ok {
			if v.exp < s.clock().Unix() {
				abort(c, apierror.New(apierror.Unauthorized, msgExpired))
				return
			}
			c.Set("JWT_PAYLOAD", jwt.MapClaims(v.claims()))
			c.Next()
			return
		}
		ginJWT(c)
	}
}

// Username returns the authenticated user's name, or "".
func Username(c *gin.Context) string { return c.GetString(ctxUser) }

// normaliseScheme rewrites "jwt <t>", "Bearer <t>" and the like to the one
// form gin-jwt reads, "JWT <t>". Anything else is left for gin-jwt to refuse.
func normaliseScheme(c *gin.Context) {
	f := strings.Fields(c.GetHeader("Authorization"))
	if len(f) == 2 && (strings.EqualFold(f[0], "jwt") || strings.EqualFold(f[0], "bearer")) {
		c.Request.Header.Set("Authorization", "JWT "+f[1])
	}
	c.Next()
}

// gate refuses tokens of users that are gone, disabled or changed password
// since the login, and writes by viewers.
func (s *Service) gate(c *gin.Context) {
	claims := jwt.ExtractClaims(c)
	login, err := loginClaims(claims)
	if err != nil {
		abort(c, err)
		return
	}
	tok, fresh := c.Get("JWT_TOKEN") // gin-jwt verified it just now
	if fresh {
		if err := s.checkFresh(tok.(string), claims); err != nil {
			abort(c, err)
			return
		}
	}
	st, err := s.allowed(c.Request.Context(), login)
	if err != nil {
		abort(c, err)
		return
	}
	if fresh {
		if exp, ok := intClaim(claims[claimExp]); ok {
			s.verified.put(tok.(string), verifiedToken{login: login, exp: exp})
		}
	}
	c.Set(ctxUser, st.username)
	if st.role != RoleEditor && isWrite(c.Request.Method) {
		abort(c, apierror.New(apierror.Forbidden, msgForbidden))
		return
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

// credentials is a validated login body.
type credentials struct{ username, password string }

// authenticate checks a login. Whether or not the user exists, it costs one
// database look-up and one bcrypt comparison (against a dummy hash when
// there is no such user), so the answer's timing does not tell.
func (s *Service) authenticate(c *gin.Context) (any, error) {
	ctx := c.Request.Context()
	cr, err := s.readCredentials(c)
	if err != nil {
		return nil, err
	}
	if checkPasswordForm(cr.password) != nil { // no user can have it: refused without comparing
		return nil, apierror.New(apierror.Invalid, msgBadCredentials)
	}
	addr := c.ClientIP()
	wait, err := s.throttle.wait(ctx, cr.username, addr)
	if err != nil {
		return nil, storeError(err)
	}
	if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		c.Header("Retry-After", strconv.Itoa(secs))
		return nil, apierror.New(apierror.TooManyRequests,
			fmt.Sprintf("Too many failed logins; try again in %d seconds.", secs))
	}
	u, err := findUser(ctx, s.db.Read(), cr.username, false)
	hash := s.dummy
	switch {
	case err == nil:
		hash = []byte(u.PasswordHash)
	case !errors.Is(err, ErrUserNotFound):
		return nil, storeError(err)
	}
	match := s.hasher.Compare(hash, cr.password) == nil
	if err != nil || !match || !u.Active {
		if ferr := s.throttle.fail(ctx, cr.username, addr); ferr != nil {
			return nil, storeError(ferr)
		}
		return nil, apierror.New(apierror.Invalid, msgBadCredentials)
	}
	if err := s.throttle.succeed(ctx, cr.username); err != nil {
		return nil, storeError(err)
	}
	if err := upgradeHash(ctx, s.db, u, cr.password, s.cost); err != nil {
		slog.WarnContext(ctx, "storing a password hash at the configured cost", "user", u.Username, "error", err)
	}
	return u, nil
}

// readCredentials validates {"username": "...", "password": "..."}.
func (s *Service) readCredentials(c *gin.Context) (credentials, error) {
	m, err := jsonbody.Object(c.Request, s.bodyLimit)
	if err != nil {
		return credentials{}, err
	}
	var cr credentials
	var errs []apierror.FieldError
	for _, f := range []struct {
		name string
		dst  *string
	}{{"username", &cr.username}, {"password", &cr.password}} {
		v, msg := stringField(m, f.name)
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
func (s *Service) refresh(c *gin.Context) {
	m, err := jsonbody.Object(c.Request, s.bodyLimit)
	if err != nil {
		abort(c, err)
		return
	}
	raw, msg := stringField(m, "token")
	if msg != "" {
		abort(c, apierror.Fields(apierror.FieldError{Field: "token", Msg: msg}))
		return
	}
	tok, err := s.mw.ParseTokenString(raw)
	if err != nil {
		abort(c, apierror.Wrap(apierror.Unauthorized, msgInvalid, err))
		return
	}
	claims, _ := tok.Claims.(gojwt.MapClaims)
	login, err := loginClaims(claims)
	if err != nil {
		abort(c, err)
		return
	}
	now := s.clock()
	if _, ok := intClaim(claims[claimExp]); !ok { // a token that never expires is not ours
		abort(c, apierror.New(apierror.Unauthorized, msgInvalid))
		return
	}
	if err := checkToken(tok.Header, claims, now); err != nil {
		abort(c, err)
		return
	}
	if time.Unix(login.origIat, 0).Add(s.window).Before(now) {
		abort(c, apierror.New(apierror.Unauthorized, msgRefreshExpired))
		return
	}
	st, err := s.allowed(c.Request.Context(), login)
	if err != nil {
		abort(c, err)
		return
	}
	next := gojwt.MapClaims(login.claims())
	next[claimUsername], next[claimExp] = st.username, now.Add(s.ttl).Unix()
	signed, err := gojwt.NewWithClaims(s.method, next).SignedString(s.secret)
	if err != nil {
		abort(c, err)
		return
	}
	tokenResponse(c, http.StatusOK, signed, time.Time{})
}

func tokenResponse(c *gin.Context, status int, token string, _ time.Time) {
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
func unauthorized(c *gin.Context, _ int, _ string) {
	v, _ := c.Get(ctxError)
	err, _ := v.(error)
	var ae *apierror.Error
	if !errors.As(err, &ae) {
		ae = tokenError(err)
	}
	abort(c, ae)
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

// abort writes err and stops the chain. A 401 carries the challenge of the
// contract; nothing else does.
func abort(c *gin.Context, err error) {
	if apierror.As(err).Kind == apierror.Unauthorized {
		c.Header("WWW-Authenticate", `JWT realm="api"`)
	} else {
		c.Writer.Header().Del("WWW-Authenticate")
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
