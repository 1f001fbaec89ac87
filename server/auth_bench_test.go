package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/seed"
	"personnel/server"
)

// BenchmarkAuthSchemes reads one department by id through the real router
// authenticated by each scheme, side by side in one run: a JWT, an API key
// (Token) and HTTP Basic (after the first request, whose bcrypt check is
// then remembered). Each should cost within 10% of the JWT read:
//
//	go test -run '^$' -bench BenchmarkAuthSchemes -benchmem -count 5 ./server/
func BenchmarkAuthSchemes(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := &authAPI{api: newAPI(b, be), coll: res{server.CompiledResources()[0]}.coll()}
			if err := seed.Fill(context.Background(), server.Loaders(a.db)["department"], seed.Options{Count: 10000, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			path := res{config.Resource{Path: "departments"}}.item(5000)
			schemes := []struct{ name, header string }{
				{"jwt", "JWT " + a.token},
				{"token", "Token " + a.keyLogin(testUser, testPassword)},
				{"basic", basic(testUser, testPassword)},
			}
			read := func(b *testing.B, header string) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Authorization", header)
				rec := httptest.NewRecorder()
				a.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
			for _, sc := range schemes {
				read(b, sc.header) // and Basic's bcrypt check, remembered
				b.Run(sc.name, func(b *testing.B) {
					for b.Loop() {
						read(b, sc.header)
					}
				})
			}
			// The authentication alone: the same middleware in front of a
			// handler that does nothing, which shows what each scheme costs
			// a request without the read's noise.
			authn, err := auth.New(a.cfg, a.db, auth.Options{})
			if err != nil {
				b.Fatal(err)
			}
			bare := gin.New()
			bare.GET("/", append(authn.Middleware(), func(c *gin.Context) { c.Status(http.StatusNoContent) })...)
			for _, sc := range schemes {
				b.Run("middleware_only/"+sc.name, func(b *testing.B) {
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, "/", nil)
						req.Header.Set("Authorization", sc.header)
						rec := httptest.NewRecorder()
						bare.ServeHTTP(rec, req)
						if rec.Code != http.StatusNoContent {
							b.Fatal(rec.Code)
						}
					}
				})
			}
			// The same reads taking turns, so that a machine shared with
			// other work slows every scheme alike: the ratios to compare.
			b.Run("interleaved", func(b *testing.B) {
				var spent [3]time.Duration
				for b.Loop() {
					for i, sc := range schemes {
						start := time.Now()
						read(b, sc.header)
						spent[i] += time.Since(start)
					}
				}
				for i, sc := range schemes {
					b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), sc.name+"-ns/read")
				}
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "token/jwt")
				b.ReportMetric(float64(spent[2])/float64(spent[0]), "basic/jwt")
			})
		})
	}
}
