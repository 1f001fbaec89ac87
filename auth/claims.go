package auth

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
)

// Claims of the user's state at the login (see tokenLogin).
const (
	claimGen        = "gen"         // the user's token generation
	claimValidAfter = "valid_after" // the user's tokens_valid_after, in unix seconds
)

// clockSkew is how far ahead of this replica's clock a token's times may
// lie. Replicas stamp tokens with whole seconds of their own clocks, so
// without it a token issued by a replica a few milliseconds ahead would
// now and then be refused by another just after a second begins.
const clockSkew = 5 * time.Second

// msgOneAuthorization answers a request that carries several Authorization
// headers.
const msgOneAuthorization = "Send one Authorization header, not several."

// singleAuthorization refuses a request with more than one Authorization
// header: which one counts would be a guess, and a proxy and the service
// guessing differently is how one credential gets checked and another used.
func (s *Service) singleAuthorization(c *gin.Context) {
	if len(c.Request.Header.Values("Authorization")) > 1 {
		s.abort(c, apierror.New(apierror.Invalid, msgOneAuthorization))
		return
	}
	c.Next()
}

// checkToken applies the checks that claims validation, switched off so
// that one clock decides expiry, would otherwise make, and the one that
// golang-jwt never makes:
//   - a "crit" header names extensions the recipient must understand (RFC
//     7515, section 4.1.11); we understand none, so any is refused;
//   - a token is not valid before its "nbf";
//   - a login ("orig_iat") cannot lie in the future, where it would move the
//     refresh window forward.
//
// Each failure is the 401 of an invalid token.
func checkToken(header, claims map[string]any, now time.Time) error {
	if _, ok := header["crit"]; ok {
		return apierror.New(apierror.Unauthorized, msgInvalid)
	}
	limit := now.Add(clockSkew)
	if v, ok := claims["nbf"]; ok {
		// Compared as a number: a huge one would not survive conversion.
		if nbf, ok := v.(float64); !ok || nbf > float64(limit.Unix()) {
			return apierror.New(apierror.Unauthorized, msgInvalid)
		}
	}
	if origIat, ok := intClaim(claims[claimOrigIat]); ok && time.Unix(origIat, 0).After(limit) {
		return apierror.New(apierror.Unauthorized, msgInvalid)
	}
	return nil
}

// tokenHeader decodes the header of a token that gin-jwt has verified (and
// does not hand over).
func tokenHeader(token string) (map[string]any, error) {
	seg, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(seg) // gin-jwt parsed it, so it is JWS's unpadded form
	if err != nil {
		return nil, apierror.Wrap(apierror.Unauthorized, msgInvalid, err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, apierror.Wrap(apierror.Unauthorized, msgInvalid, err)
	}
	return h, nil
}

// checkFresh applies checkToken to a token gin-jwt has just verified.
func (s *Service) checkFresh(token string, claims map[string]any) error {
	header, err := tokenHeader(token)
	if err != nil {
		return err
	}
	return checkToken(header, claims, s.clock())
}

// tokenLogin is what a token says about the login it came from.
//
// A token carries the user's token generation and tokens_valid_after as
// they were at the login, and stays valid while both are unchanged. The
// generation moves on every password change and disabling, however many
// happen within a second; comparing times would refuse a token from a
// login in the same second as a change (they have whole seconds) or
// accept one from just before it. tokens_valid_after is compared too
// because a version before generations, run during an upgrade, moves only
// it. Neither is compared with a clock, so clocks that differ between
// hosts do not matter. A token without them (issued by that earlier
// version) is valid while its login is not older than tokens_valid_after.
type tokenLogin struct {
	userID, origIat int64
	gen             int64 // the user's token generation at the login, or noGen
	validAfter      int64 // the user's tokens_valid_after at the login (unix seconds), with gen
}

// noGen is the generation of a token issued before tokens carried one.
const noGen = -1

// loginClaims reads the login a verified token carries; a token without a
// user and a login time, or with a malformed generation, is invalid.
func loginClaims(claims map[string]any) (tokenLogin, error) {
	invalid := apierror.New(apierror.Unauthorized, msgInvalid)
	id, ok1 := intClaim(claims[claimUserID])
	origIat, ok2 := intClaim(claims[claimOrigIat])
	if !ok1 || !ok2 {
		return tokenLogin{}, invalid
	}
	l := tokenLogin{userID: id, origIat: origIat, gen: noGen}
	gen, hasGen := claims[claimGen]
	validAfter, hasValidAfter := claims[claimValidAfter]
	switch {
	case hasGen != hasValidAfter:
		return tokenLogin{}, invalid
	case hasGen:
		var ok1, ok2 bool
		l.gen, ok1 = intClaim(gen)
		l.validAfter, ok2 = intClaim(validAfter)
		if !ok1 || !ok2 || l.gen < 0 {
			return tokenLogin{}, invalid
		}
	}
	return l, nil
}

// current reports whether no password change or disabling of the user has
// happened since the login.
func (l tokenLogin) current(st userState) bool {
	if l.gen == noGen {
		return l.origIat >= st.validAfter
	}
	return l.gen == st.generation && l.validAfter == st.validAfter
}

// after reports whether the login saw a later state of the user than st:
// then st is out of date. Both values only move forward (but for clocks
// that differ between hosts, which a later read of the user settles).
func (l tokenLogin) after(st userState) bool {
	return l.gen != noGen && (l.gen > st.generation || l.gen == st.generation && l.validAfter > st.validAfter)
}

// claims returns the login as claims, numbers as JSON decoding gives them,
// for a refreshed token and for requests that reuse a verified one.
func (l tokenLogin) claims() map[string]any {
	m := map[string]any{claimUserID: float64(l.userID), claimOrigIat: float64(l.origIat)}
	if l.gen != noGen {
		m[claimGen], m[claimValidAfter] = float64(l.gen), float64(l.validAfter)
	}
	return m
}
