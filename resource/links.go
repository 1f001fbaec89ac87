package resource

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Links makes the absolute URLs of responses (next, previous, Location).
// Scheme and host come from the configured public URL when there is one;
// otherwise from the request, believing X-Forwarded-Proto and
// X-Forwarded-Host only from a trusted proxy.
type Links struct {
	Public  *url.URL       // scheme, host and optional path prefix; nil: from the request
	Trusted []netip.Prefix // proxies whose forwarding headers are believed
}

// origin returns scheme://host[/prefix] for r.
func (l Links) origin(r *http.Request) string {
	if l.Public != nil {
		return l.Public.Scheme + "://" + l.Public.Host + l.Public.EscapedPath()
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if l.trusted(r) {
		if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
			scheme = p
		}
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" && !strings.ContainsAny(h, "/\\ @?#") {
			host = h
		}
	}
	return scheme + "://" + host
}

func (l Links) trusted(r *http.Request) bool {
	if len(l.Trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range l.Trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Page returns the URL of page n of the list r asked for, keeping every
// other parameter; page 1 has no page parameter. Parameters are sorted, as
// Django REST Framework does.
func (l Links) Page(r *http.Request, n int) string {
	q := r.URL.Query()
	q.Del("page")
	if n > 1 {
		q.Set("page", strconv.Itoa(n))
	}
	u := l.origin(r) + r.URL.EscapedPath()
	if enc := q.Encode(); enc != "" {
		u += "?" + enc
	}
	return u
}

// Absolute returns the URL of path (from the server root) as a client of r
// reaches it.
func (l Links) Absolute(r *http.Request, path string) string { return l.origin(r) + path }

// Record returns the URL of the record id in the collection r was sent to.
func (l Links) Record(r *http.Request, id int) string {
	return l.origin(r) + strings.TrimSuffix(r.URL.EscapedPath(), "/") + "/" + strconv.Itoa(id) + "/"
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.ToLower(strings.TrimSpace(v))
}
