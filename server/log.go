package server

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/auth"
)

// requestLog logs every request once it is answered.
func requestLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "(unmatched)"
		}
		slog.LogAttrs(c.Request.Context(), slog.LevelInfo, "request",
			slog.String("method", c.Request.Method),
			slog.String("route", route),
			slog.Int("status", c.Writer.Status()),
			slog.Duration("latency", time.Since(start)),
			slog.String("user", auth.Username(c)),
		)
	}
}
