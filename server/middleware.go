package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/auth"
	"personnel/logging"
	"personnel/openapi"
	"personnel/resource"
)

// requestIDHeader carries a request's id in both directions.
const requestIDHeader = "X-Request-ID"

// requestID takes the client's X-Request-ID when it is sensible (up to 128
// letters, digits and -_.:) or makes one, echoes it, and puts it in the
// request's context for every log line.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		var id string
		if v := c.Request.Header[requestIDKey]; len(v) > 0 {
			id = v[0]
		}
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Writer.Header()[requestIDKey] = []string{id}
		c.Request = c.Request.WithContext(logging.WithRequestID(c.Request.Context(), id))
		c.Next()
	}
}

// requestIDKey is requestIDHeader as net/http keys it: a header looked up
// by this spelling is not canonicalised on every request.
var requestIDKey = http.CanonicalHeaderKey(requestIDHeader)

// newRequestID makes a request id of 32 random hex digits.
func newRequestID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], rand.Uint64())
	binary.BigEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:", c) >= 0) {
			return false
		}
	}
	return true
}

// standardMethods are the methods logs and metrics name; any other is
// "OTHER", so a client cannot add a label value or a long log field by
// inventing method names.
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
	http.MethodConnect: true, http.MethodTrace: true,
}

// method is the request's method as logs and metrics show it.
func method(c *gin.Context) string {
	if standardMethods[c.Request.Method] {
		return c.Request.Method
	}
	return "OTHER"
}

// maxLogged is the most bytes of one client-supplied string a log line
// holds.
const maxLogged = 64

// capped cuts s to maxLogged bytes on a character boundary, marking the cut.
func capped(s string) string {
	if len(s) <= maxLogged {
		return s
	}
	cut := maxLogged
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// routes gives each request the route template it matched, in the OpenAPI
// document's syntax (/departments/{id}/), for logs and metrics: templates
// are few, so labels stay few whatever paths clients send.
type routes struct {
	labels    map[string]string // gin template -> OpenAPI template
	templates [][]string        // segments of every template, for 405s
	names     []string          // OpenAPI form of templates[i]
}

// set records the routes the engine serves; it is called once, after every
// route is registered and before any request. A path served with and
// without its trailing slash has one label, the documented form with it.
func (rs *routes) set(infos gin.RoutesInfo) {
	served := map[string]bool{}
	for _, ri := range infos {
		served[ri.Path] = true
	}
	rs.labels = map[string]string{}
	for _, ri := range infos {
		if _, seen := rs.labels[ri.Path]; seen {
			continue
		}
		name := ri.Path
		if !strings.HasSuffix(name, "/") && served[name+"/"] {
			name += "/"
		}
		name = openAPIPath(name)
		rs.labels[ri.Path] = name
		rs.templates = append(rs.templates, strings.Split(ri.Path, "/"))
		rs.names = append(rs.names, name)
	}
}

// openAPIPath turns gin's :name and *name segments into {name}.
func openAPIPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s != "" && (s[0] == ':' || s[0] == '*') {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

// label returns the template of the request's route, "unmatched" when no
// route has its path. A 405 has no route in gin, so its path is matched
// against every template (the one with most literal segments wins, as in
// the router).
func (rs *routes) label(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		if l, ok := rs.labels[r]; ok {
			return l
		}
		return openAPIPath(r)
	}
	if c.Writer.Status() != http.StatusMethodNotAllowed {
		return "unmatched"
	}
	segs := strings.Split(c.Request.URL.Path, "/")
	best, bestScore := "unmatched", -1
	for i, t := range rs.templates {
		if len(t) != len(segs) {
			continue
		}
		score := 0
		for j, s := range t {
			switch {
			case s != "" && (s[0] == ':' || s[0] == '*'):
				if segs[j] == "" {
					score = -1
				}
			case s == segs[j]:
				score++
			default:
				score = -1
			}
			if score < 0 {
				break
			}
		}
		if score > bestScore {
			best, bestScore = rs.names[i], score
		}
	}
	return best
}

// healthPaths are the probes' paths: answered many times a minute by
// machines, they are logged at DEBUG.
var healthPaths = map[string]bool{openapi.HealthPath: true, openapi.ReadyPath: true}

// requestLog logs every request once it is answered: never its body,
// headers or query, which may hold passwords and tokens. Client-supplied
// strings are capped; server errors are logged at ERROR, health probes at
// DEBUG, everything else at INFO.
func requestLog(rs *routes) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelInfo
		switch {
		case healthPaths[c.FullPath()]:
			level = slog.LevelDebug
		case status >= 500:
			level = slog.LevelError
		}
		ctx := c.Request.Context()
		l := slog.Default()
		if !l.Enabled(ctx, level) {
			return
		}
		logging.LogRequest(ctx, l, level, logging.Request{
			Method:  method(c),
			Route:   rs.label(c),
			ID:      capped(c.Param("id")),
			Status:  status,
			Latency: time.Since(start),
			Bytes:   max(0, c.Writer.Size()), // -1 until something is written
			User:    capped(auth.Username(c)),
			Client:  capped(c.ClientIP()),
		})
	}
}

// recovery turns a panic into a logged stack and a plain 500.
func recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.ErrorContext(c.Request.Context(), "panic serving request", "panic", p, "stack", string(debug.Stack()))
				if !c.Writer.Written() {
					fail(c, fmt.Errorf("panic: %v", p))
				}
				c.Abort()
			}
		}()
		c.Next()
	}
}

// deadline bounds the request's context, which every database call uses:
// when the database stops answering, the request ends with 503 after d
// instead of hanging until the client gives up. It runs after readBody, so
// a client sending its body slowly never uses up the database's time.
func deadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		base := c.Request.Context()
		ctx, cancel := context.WithTimeout(base, d)
		defer cancel()
		c.Request = c.Request.WithContext(resource.WithBase(ctx, base))
		c.Next()
	}
}

// readBody reads the whole request body, up to limit bytes, before any
// handler runs: a body over the limit is a 413 whether or not it was
// announced with Content-Length (a chunked one is counted as it arrives),
// and one that does not arrive within the server's read timeout is a 408.
// Handlers then read it from memory.
//
// An import's file may be larger: up to importLimit.
func readBody(bodyLimit, importLimit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		limit := bodyLimit
		if strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/import") && r.Method == http.MethodPost {
			limit = max(bodyLimit, importLimit)
		}
		if r.ContentLength > limit {
			fail(c, tooLarge(limit))
			return
		}
		if r.Body == nil || r.Body == http.NoBody || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
			c.Next()
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, limit))
		if err != nil {
			var tooBig *http.MaxBytesError
			var netErr net.Error
			switch {
			case errors.As(err, &tooBig):
				fail(c, tooLarge(limit))
			case errors.As(err, &netErr) && netErr.Timeout() || errors.Is(err, os.ErrDeadlineExceeded):
				// The connection's read deadline cannot be lifted to read
				// the rest, so the connection closes after the answer.
				c.Header("Connection", "close")
				fail(c, apierror.Wrap(apierror.RequestTimeout, "The request body did not arrive in time.", err))
			default:
				fail(c, apierror.Wrap(apierror.Invalid, "The request body could not be read.", err))
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		c.Next()
	}
}

func tooLarge(limit int64) error {
	return apierror.New(apierror.TooLarge, fmt.Sprintf("The request body is larger than %d bytes.", limit))
}

// checkQuery refuses an API request whose query string the parser cannot
// read whole (a ";" in a pair, more than 10,000 parameters): gin and the
// list parser drop what they cannot parse, which would silently drop
// filters and answer every record.
func checkQuery() gin.HandlerFunc {
	return func(c *gin.Context) {
		// An empty query has nothing to parse (and no map to make).
		if q := c.Request.URL.RawQuery; q != "" {
			if _, err := url.ParseQuery(q); err != nil {
				fail(c, apierror.Wrap(apierror.Invalid, "The query string cannot be parsed: "+queryProblem(err)+".", err))
				return
			}
		}
		c.Next()
	}
}

// queryProblem says what is wrong with a query string, in words that echo
// nothing the client sent.
func queryProblem(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "semicolon"):
		return `";" is not a separator; encode it as %3B`
	case strings.Contains(msg, "exceeded"):
		return "more than 10000 parameters"
	}
	return "invalid percent-encoding"
}

// allowedHosts answers 400 to a request whose Host (or, from a trusted
// proxy, X-Forwarded-Host) is not one of patterns, with Django's
// ALLOWED_HOSTS rules: "hr.example.com" exactly, ".example.com" that domain
// and its subdomains, "*" any. As in Django, a value that is not a host
// name with an optional port of digits (resource.SplitHost) is refused
// whatever the patterns, "*" or none among them. Links are built from
// these headers when no public URL is set, so an unvetted one could point
// clients elsewhere. Health probes and metrics build no links and are
// asked by address, so they pass.
func allowedHosts(patterns []string, trusted []netip.Prefix) gin.HandlerFunc {
	if slices.Contains(patterns, "*") {
		patterns = nil
	}
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		if healthPaths[p] || p == openapi.MetricsPath {
			c.Next()
			return
		}
		msg := hostProblem(c.Request.Host, patterns)
		if msg == "" && fromTrusted(c.Request, trusted) {
			if h := strings.TrimSpace(strings.Split(c.GetHeader("X-Forwarded-Host"), ",")[0]); h != "" {
				msg = hostProblem(h, patterns)
			}
		}
		if msg != "" {
			fail(c, apierror.New(apierror.Invalid, msg))
			return
		}
		c.Next()
	}
}

// hostProblem says why host is not served, or returns "" when it is: a
// host name with an optional port of digits that matches one of patterns
// (with no patterns, any such host).
func hostProblem(host string, patterns []string) string {
	h, _, ok := resource.SplitHost(host)
	if !ok {
		return "Invalid Host header: not a host name with an optional port of digits."
	}
	if len(patterns) == 0 {
		return ""
	}
	for _, p := range patterns {
		if p == h || p[0] == '.' && (strings.HasSuffix(h, p) || h == p[1:]) {
			return ""
		}
	}
	return "Invalid Host header: add it to PERSONNEL_ALLOWED_HOSTS to serve it."
}

// fromTrusted reports whether the request came from a trusted proxy.
func fromTrusted(r *http.Request, trusted []netip.Prefix) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range trusted {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// tokenPaths end the paths of the token endpoints, whose answers hold
// credentials.
var tokenPaths = []string{"-token-auth", "-token-refresh", "-token-verify"}

// nosniff is the value of X-Content-Type-Options, one slice shared by every
// answer (net/http only reads it), so that setting it allocates nothing.
var nosniff = []string{"nosniff"}

// securityHeaders set what every answer carries: no content sniffing, and
// for token endpoints no caching (a token must not stay in a proxy's or
// browser's cache).
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h["X-Content-Type-Options"] = nosniff
		p := strings.TrimSuffix(c.Request.URL.Path, "/")
		for _, suffix := range tokenPaths {
			if strings.HasSuffix(p, suffix) {
				h.Set("Cache-Control", "no-store")
				break
			}
		}
		c.Next()
	}
}

// cors lets browser pages from the allowed origins call the API. Tokens
// travel in a header, never a cookie, so credentials are not allowed.
func cors(origins []string) gin.HandlerFunc {
	any := slices.Contains(origins, "*")
	exposed := strings.Join([]string{"ETag", "Location", "Retry-After", requestIDHeader}, ", ")
	return func(c *gin.Context) {
		if len(origins) == 0 {
			c.Next()
			return
		}
		// The answer depends on Origin whenever CORS is on, also when it
		// allows nothing: a cache must not give one origin's answer to another.
		h := c.Writer.Header()
		h.Add("Vary", "Origin")
		origin := c.GetHeader("Origin")
		if origin == "" || (!any && !slices.Contains(origins, origin)) {
			c.Next()
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", exposed)
		if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match, "+requestIDHeader)
			h.Set("Access-Control-Max-Age", strconv.Itoa(600))
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		c.Next()
	}
}

func fail(c *gin.Context, err error) {
	apierror.Write(c.Request.Context(), c.Writer, err)
	c.Abort()
}
