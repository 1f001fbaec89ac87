package server

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/db"
)

// readyTimeout is how long /readyz waits for the database.
const readyTimeout = 2 * time.Second

func healthz(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", []byte(`{"status":"ok"}`))
}

// readyz answers 200 when the database answers within readyTimeout, else
// 503: a load balancer then sends traffic elsewhere.
func readyz(d *db.DB) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
		defer cancel()
		if err := d.Ping(ctx); err != nil {
			fail(c, apierror.Unavailability(err))
			return
		}
		c.Data(http.StatusOK, "application/json", []byte(`{"status":"ready"}`))
	}
}
