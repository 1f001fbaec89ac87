package server

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/auth"
	"personnel/logging"
)

// requestIDHeader carries a request's id in both directions.
const requestIDHeader = "X-Request-ID"

// requestID takes the client's X-Request-ID when it is sensible (up to 128
// letters, digits and -_.:) or makes one, echoes it, and puts it in the
// request's context for every log line.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(requestIDHeader)
		if !validRequestID(id) {
			id = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
		}
		c.Header(requestIDHeader, id)
		c.Request = c.Request.WithContext(logging.WithRequestID(c.Request.Context(), id))
		c.Next()
	}
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

// route is the route template a request matched, which keeps the labels of
// logs and metrics few.
func route(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// requestLog logs every request once it is answered: never its body,
// headers or query, which may hold passwords and tokens.
func requestLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		slog.LogAttrs(c.Request.Context(), slog.LevelInfo, "request",
			slog.String("method", c.Request.Method),
			slog.String("route", route(c)),
			slog.Int("status", c.Writer.Status()),
			slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int("bytes", c.Writer.Size()),
			slog.String("user", auth.Username(c)),
			slog.String("client", c.ClientIP()),
		)
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
// instead of hanging until the client gives up.
func deadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// bodyLimit refuses bodies over limit bytes with 413, before any handler
// reads them.
func bodyLimit(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			fail(c, apierror.New(apierror.TooLarge, fmt.Sprintf("The request body is larger than %d bytes.", limit)))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		c.Next()
	}
}

// cors lets browser pages from the allowed origins call the API. Tokens
// travel in a header, never a cookie, so credentials are not allowed.
func cors(origins []string) gin.HandlerFunc {
	any := slices.Contains(origins, "*")
	exposed := strings.Join([]string{"ETag", "Location", "Retry-After", requestIDHeader}, ", ")
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		if origin == "" || (!any && !slices.Contains(origins, origin)) {
			c.Next()
			return
		}
		h := c.Writer.Header()
		h.Add("Vary", "Origin")
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
