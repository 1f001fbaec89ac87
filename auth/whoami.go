package auth

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
)

// ctxRole holds the authenticated user's role, for WhoAmI.
const ctxRole = "personnel.auth.role"

// WhoAmI answers who the request's credentials belong to:
// {"username": "ann", "role": "editor"} (or "viewer"). It runs behind
// Middleware, which has checked them. A browser page (the admin UI) asks
// it to know whether to offer edit controls; the server refuses a
// viewer's writes whatever a page offers.
func WhoAmI(c *gin.Context) {
	b := apierror.AppendString([]byte(`{"username":`), c.GetString(ctxUser))
	b = append(b, `,"role":`...)
	b = apierror.AppendString(b, c.GetString(ctxRole))
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/json", append(b, '}'))
}
