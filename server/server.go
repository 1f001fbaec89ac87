// Package server builds Personnel's HTTP handler from its configuration:
// the middleware every request passes, the API root with each resource
// registered on it, and JSON answers for unknown paths and methods.
package server

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/openapi"
	"personnel/resource"
	"personnel/web"
)

// APIRoot is where the resources are served.
const APIRoot = "/personnel/api"

// Where the pages are served: the admin UI, and the API reference that
// renders the OpenAPI document. Pages are not operations of the API, so
// the document does not list them.
const (
	AdminPath = "/admin"
	DocsPath  = APIRoot + "/docs"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// Server is the HTTP side of Personnel.
type Server struct {
	engine    *gin.Engine
	resources []config.Resource
	doc       []byte
}

// Option adjusts what New builds.
type Option func(*options)

type options struct {
	auth     auth.Options
	version  string
	revision string
}

// WithAuthOptions passes options (a clock, a password hasher) to the
// authentication, for tests.
func WithAuthOptions(a auth.Options) Option {
	return func(o *options) { o.auth = a }
}

// WithVersion sets the version the OpenAPI document and the
// personnel_build_info metric state.
func WithVersion(v string) Option {
	return func(o *options) { o.version = v }
}

// WithRevision sets the VCS revision the personnel_build_info metric states.
func WithRevision(r string) Option {
	return func(o *options) { o.revision = r }
}

// New builds the handler: health and metrics, the token endpoints, the
// OpenAPI document, and the resources under APIRoot behind authentication.
// It fails when there is no usable JWT secret.
func New(cfg *config.Config, d *db.DB, opts ...Option) (*Server, error) {
	o := options{version: "dev", revision: "unknown"}
	for _, opt := range opts {
		opt(&o)
	}
	e := gin.New()
	// Paths are served with and without the trailing slash; a redirect
	// would cost clients their body or Authorization header.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	proxies := make([]string, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		proxies[i] = p.String()
	}
	if err := e.SetTrustedProxies(proxies); err != nil {
		return nil, fmt.Errorf("PERSONNEL_TRUSTED_PROXIES: %w", err)
	}
	rs := &routes{} // filled in once every route is registered
	var m *metrics
	middleware := []gin.HandlerFunc{requestID(), securityHeaders()}
	if cfg.Metrics {
		m = newMetrics(d, rs, o.version, o.revision)
		middleware = append(middleware, m.middleware())
	}
	// The body is read whole before the database deadline starts, so a slow
	// client gets 408 and never uses up the database's time.
	middleware = append(middleware, requestLog(rs), recovery(), allowedHosts(cfg.AllowedHosts, cfg.TrustedProxies),
		cors(cfg.CORSOrigins), readBody(cfg.BodyLimit, cfg.ImportLimit), deadline(cfg.DBTimeout))
	e.Use(middleware...)
	e.NoRoute(func(c *gin.Context) { fail(c, apierror.NotFoundError()) })
	e.NoMethod(func(c *gin.Context) {
		// gin lists the methods routed for the path; HEAD is served as GET
		// (Handler), and DRF lists them in an order of its own.
		h := c.Writer.Header()
		h.Set("Allow", resource.AllowHeader(strings.Split(h.Get("Allow"), ", ")))
		// The method is the client's own string: cut, like everything echoed or logged.
		fail(c, apierror.New(apierror.MethodNotAllowed, fmt.Sprintf("Method %q not allowed.", capped(c.Request.Method))))
	})

	e.GET(openapi.HealthPath, healthz)
	e.GET(openapi.ReadyPath, readyz(d))
	if m != nil {
		e.GET(openapi.MetricsPath, m.handler())
	}
	authn, err := auth.New(cfg, d, o.auth)
	if err != nil {
		return nil, err
	}
	authn.Routes(e)

	srv := &Server{engine: e}
	// The document is public, so it is registered before the authenticated
	// group takes over the API root; so is the page that renders it.
	e.GET(APIRoot+openapi.DocPath, func(c *gin.Context) { c.Data(http.StatusOK, "application/json", srv.doc) })
	pages(e, DocsPath, web.Docs())
	if cfg.AdminUI {
		pages(e, AdminPath, web.Admin())
	}
	api := e.Group(APIRoot, append([]gin.HandlerFunc{checkQuery()}, authn.Middleware()...)...)
	api.GET(openapi.WhoAmIPath, auth.WhoAmI)
	api.GET(strings.TrimSuffix(openapi.WhoAmIPath, "/"), auth.WhoAmI)
	links := resource.Links{Public: cfg.PublicURL, Trusted: cfg.TrustedProxies}
	reg := resource.NewRegistry(api, d, resource.Options{
		PageSizeMax:   cfg.PageSizeMax,
		BodyLimit:     cfg.BodyLimit,
		ImportLimit:   cfg.ImportLimit,
		ImportRows:    cfg.ImportRows,
		BulkLimit:     cfg.BulkLimit,
		Links:         links,
		TreeNodeLimit: cfg.TreeNodeLimit,
		StrictQuery:   cfg.StrictQuery,
		CanWrite:      auth.CanWrite,
		CanReadAudit:  func(c *gin.Context) bool { return cfg.AuditViewers || auth.CanWrite(c) },
		DBTimeout:     cfg.DBTimeout,
		Without:       cfg.Without,
		Resources:     compiledResources,
	})
	for _, desc := range compiledResources {
		resource.Register(reg, desc)
	}
	resource.RegisterAudit(reg)
	root := apiRoot(links, compiledResources)
	e.GET(APIRoot, root)
	e.GET(APIRoot+"/", root)
	srv.resources = compiledResources
	public := ""
	if cfg.PublicURL != nil {
		public = cfg.PublicURL.String()
	}
	srv.doc, err = openapi.Build(openapi.Input{
		PublicURL: public,
		Version:   o.version, APIRoot: APIRoot, Resources: reg.Resources(), Operations: reg.Operations(), Schemas: reg.Schemas(),
		Metrics: cfg.Metrics,
	})
	if err != nil {
		return nil, err
	}
	rs.set(e.Routes())
	return srv, nil
}

// pages serves p's files below prefix, with no credentials: the pages
// hold nothing but code, and ask for the data with the user's token. The
// prefix itself redirects to prefix/ (relative, so it also works behind a
// proxy that mounts the service under a path), where the pages' relative
// links resolve.
func pages(e *gin.Engine, prefix string, p *web.Pages) {
	base := prefix[strings.LastIndexByte(prefix, '/')+1:] + "/"
	e.GET(prefix, func(c *gin.Context) {
		c.Header("Location", base)
		c.Status(http.StatusMovedPermanently)
	})
	e.GET(prefix+"/*file", func(c *gin.Context) {
		if !p.Serve(c.Writer, c.Request, strings.TrimPrefix(c.Param("file"), "/")) {
			fail(c, apierror.NotFoundError())
		}
	})
}

// apiRoot answers the API root as Django REST Framework's does, with no
// token: a link to each resource, and to the OpenAPI document.
func apiRoot(links resource.Links, rs []config.Resource) gin.HandlerFunc {
	return func(c *gin.Context) {
		b := []byte{'{'}
		for _, r := range rs {
			b = apierror.AppendString(b, r.Path)
			b = append(b, ':')
			b = apierror.AppendString(b, links.Absolute(c.Request, APIRoot+"/"+r.Path+"/"))
			b = append(b, ',')
		}
		b = append(b, `"openapi":`...)
		b = apierror.AppendString(b, links.Absolute(c.Request, APIRoot+openapi.DocPath))
		c.Data(http.StatusOK, "application/json", append(b, '}'))
	}
}

// Handler returns the HTTP handler. HEAD is answered as GET: gin routes
// HEAD only where it is registered, and monitors and load balancers probe
// with it. The body is dropped by net/http, whose connection still holds
// the HEAD request; logs and metrics count such a request as a GET.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.WithContext(r.Context()) // a shallow copy, to change the method
			r.Method = http.MethodGet
		}
		s.engine.ServeHTTP(w, r)
	})
}

// Routes lists the routes the router serves, for checking that the
// OpenAPI document describes each of them.
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }

// Resources returns the descriptions of the resources served.
func (s *Server) Resources() []config.Resource { return s.resources }

// CompiledResources returns the resources this binary was generated for.
func CompiledResources() []config.Resource { return compiledResources }

// CheckResources compares the resources list embedded in the binary with
// the resources compiled in, and says what to run when they differ.
func CheckResources() error {
	listed, err := config.Resources()
	if err != nil {
		return err
	}
	if reflect.DeepEqual(listed, compiledResources) {
		return nil
	}
	return errors.New(config.ResourcesFile + " does not match the resources compiled into this binary: " +
		"run `go generate ./...` and rebuild (go build ./cmd/personnel)")
}

// Loaders returns a bulk loader for every compiled resource, by name, over
// d, without building the HTTP side (no secret needed): for `personnel
// seed` and benchmarks.
func Loaders(d *db.DB) map[string]resource.Loader {
	out := map[string]resource.Loader{}
	for name, r := range ResourcesOf(d, nil) {
		out[name] = r
	}
	return out
}

// ResourcesOf registers every compiled resource with d, outside any
// router, for the commands that import and export (the limits of cfg,
// when given), by name.
func ResourcesOf(d *db.DB, cfg *config.Config) map[string]*resource.Resource {
	opts := resource.Options{Resources: compiledResources}
	if cfg != nil {
		opts.ImportLimit, opts.ImportRows, opts.BulkLimit = cfg.ImportLimit, cfg.ImportRows, cfg.BulkLimit
		opts.DBTimeout = cfg.DBTimeout
	}
	reg := resource.NewRegistry(gin.New(), d, opts)
	out := map[string]*resource.Resource{}
	for _, desc := range compiledResources {
		out[desc.Name] = resource.Register(reg, desc)
	}
	return out
}
