// Package web holds the service's pages, embedded in the binary so that
// they work with nothing else installed and fetch nothing from another
// host: the admin UI (admin/, plain ES modules and CSS written by hand,
// no build step) and the API reference page (docs/, swagger-ui-dist's
// files as published on npm, listed with their checksums in VENDORED, and
// an initializer of ours). Both are driven by the OpenAPI document the
// server serves, so a resource added by config appears in them with no
// code of its own.
//
// Pages serves one of them with the headers every page carries: a strict
// Content-Security-Policy (no inline script, no framing), an ETag for
// revalidation, and gzip when the browser takes it.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed admin docs
var files embed.FS

// The pages' policies. Both forbid inline script, plugins, <base> and
// framing, and allow requests to this origin only. A form never submits
// by itself (script sends what it holds), so form-action is 'none': a
// sign-in form submitted before its script loaded cannot put a password
// in a URL. swagger-ui draws its icons from data: URIs in its stylesheet.
const (
	adminPolicy = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	docsPolicy  = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// Pages serves the files of one embedded directory.
type Pages struct {
	policy string
	files  map[string]*file
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
	gzipOnce    sync.Once
	gzipped     []byte // nil when compressing does not pay
}

// Admin returns the admin UI's files.
func Admin() *Pages { return load("admin", adminPolicy) }

// Docs returns the API reference page's files.
func Docs() *Pages { return load("docs", docsPolicy) }

func load(dir, policy string) *Pages {
	p := &Pages{policy: policy, files: map[string]*file{}}
	err := fs.WalkDir(files, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		p.files[strings.TrimPrefix(name, dir+"/")] = &file{
			body:        body,
			contentType: contentType(name),
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
	if err != nil {
		panic("web: reading the embedded " + dir + ": " + err.Error()) // the files are part of the binary
	}
	return p
}

// Names returns the names of the files, for tests and size reports.
func (p *Pages) Names() []string {
	names := make([]string, 0, len(p.files))
	for name := range p.files {
		names = append(names, name)
	}
	return names
}

// contentType is the type of a file by its extension; files without one
// (LICENSE, NOTICE) are text.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	}
	return "text/plain; charset=utf-8"
}

// Serve answers the request with the file name ("" for index.html) and
// reports true, or writes nothing and reports false when there is no such
// file. Every answer carries the page headers; a browser that holds the
// current version gets 304.
func (p *Pages) Serve(w http.ResponseWriter, r *http.Request, name string) bool {
	if name == "" {
		name = "index.html"
	}
	f := p.files[name]
	if f == nil {
		return false
	}
	h := w.Header()
	h.Set("Content-Security-Policy", p.policy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	// Revalidated on every load (a 304 when unchanged), so a new binary's
	// pages are never mixed with an old one's cached modules.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Content-Type", f.contentType)
	if match := r.Header.Get("If-None-Match"); match != "" && etagListed(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	body := f.body
	if acceptsGzip(r) {
		if gz := f.compressed(); gz != nil {
			h.Set("Content-Encoding", "gzip")
			body = gz
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}

// compressed returns the gzipped body, compressed on first use, or nil
// when that is not smaller.
func (f *file) compressed() []byte {
	f.gzipOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(f.body)
		_ = zw.Close()
		if buf.Len() < len(f.body) {
			f.gzipped = buf.Bytes()
		}
	})
	return f.gzipped
}

// GzipSize returns the size of the file name as served to a browser that
// takes gzip, for the size budget; -1 when there is no such file.
func (p *Pages) GzipSize(name string) int {
	f := p.files[name]
	if f == nil {
		return -1
	}
	if gz := f.compressed(); gz != nil {
		return len(gz)
	}
	return len(f.body)
}

// etagListed reports whether an If-None-Match value lists etag (or is *).
func etagListed(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (and does not refuse it with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
