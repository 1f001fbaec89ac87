package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"personnel/db"
)

// metrics are the Prometheus metrics of one server, on a registry of its
// own (tests start many servers in one process).
//
// Every label value comes from a fixed set: route templates, the standard
// methods (any other is OTHER) and the statuses the server answers, so the
// number of series cannot grow with what clients send.
type metrics struct {
	registry *prometheus.Registry
	routes   *routes
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge

	// series are the request counter and latency histogram of each label
	// set met so far: looked up by the labels' own strings, without the
	// hashing, the label checks and the status's formatting that
	// WithLabelValues does for every request. Label values come from
	// fixed sets, so the map stays small.
	mu     sync.RWMutex
	series map[seriesKey]series
}

type seriesKey struct {
	route, method string
	status        int
}

type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// seriesOf returns the counter and histogram of a route, method and status.
func (m *metrics) seriesOf(route, method string, status int) series {
	k := seriesKey{route, method, status}
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return s
	}
	s = series{m.requests.WithLabelValues(route, method, strconv.Itoa(status)), m.latency.WithLabelValues(route, method)}
	m.mu.Lock()
	m.series[k] = s
	m.mu.Unlock()
	return s
}

func newMetrics(d *db.DB, rs *routes, version, revision string) *metrics {
	m := &metrics{
		routes:   rs,
		series:   map[seriesKey]series{},
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "personnel_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "personnel_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route template and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "personnel_http_requests_in_flight",
			Help: "HTTP requests being answered now.",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "personnel_build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision},
	})
	build.Set(1)
	m.registry.MustRegister(m.requests, m.latency, m.inFlight, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for name, pool := range d.Pools() {
		m.registry.MustRegister(collectors.NewDBStatsCollector(pool, name))
	}
	return m
}

// middleware counts and times every request.
func (m *metrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		start := time.Now()
		c.Next()
		s := m.seriesOf(m.routes.label(c), method(c), c.Writer.Status())
		s.requests.Inc()
		s.latency.Observe(time.Since(start).Seconds())
	}
}

func (m *metrics) handler() gin.HandlerFunc {
	h := promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}
