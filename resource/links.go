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
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
			host = h
		}
	}
	if _, _, ok := SplitHost(host); !ok {
		// The server refuses such a request before any link is made (a
		// 400); should one get here, its host is not echoed.
		host = "localhost"
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

// SplitHost splits a Host header value (or X-Forwarded-Host) into its
// lower-case domain, without a trailing dot, and its port, by Django's
// rule: a domain of letters, digits, '.', '-' (and '_', which container
// host names have) or a bracketed IPv6 address, then optionally ':' and
// digits. Anything else ("127.0.0.1:evil.com", "a@b", "x/y") is not a
// host: ok is false, and nothing may be built from it.
func SplitHost(host string) (domain, port string, ok bool) {
	h := strings.ToLower(host)
	domain, port = h, ""
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		domain, port = h[:i], h[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return "", "", false
		}
	}
	switch {
	case domain == "":
		return "", "", false
	case domain[0] == '[':
		// An IPv6 literal: hex digits, ':' and '.', with a ':' in it.
		inner, closed := strings.CutSuffix(domain[1:], "]")
		if !closed || !strings.Contains(inner, ":") || strings.Trim(inner, "0123456789abcdef:.") != "" {
			return "", "", false
		}
		return domain, port, true
	case strings.Trim(domain, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "":
		return "", "", false
	}
	return strings.TrimSuffix(domain, "."), port, true
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.ToLower(strings.TrimSpace(v))
}
