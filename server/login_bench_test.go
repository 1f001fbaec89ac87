package server_test

import (
	"net/http"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
)

// BenchmarkLogin compares a wrong password for an existing user with an
// unknown user, at the default bcrypt cost: the two should take the same
// time, so a client cannot tell which usernames exist.
//
//	go test -run '^$' -bench BenchmarkLogin -benchtime 30x ./server/
func BenchmarkLogin(b *testing.B) {
	a := newAPI(b, dbtest.Backends(b)[0], func(c *config.Config) {
		c.BcryptCost = config.Default().BcryptCost
		c.LoginFailuresUser, c.LoginFailuresAddr = 1<<30, 1<<30
	})
	for _, bc := range []struct{ name, user string }{
		{"wrong_password", testUser},
		{"unknown_user", "nobody"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := map[string]string{"username": bc.user, "password": "not the password"}
			for b.Loop() {
				if resp := a.do(http.MethodPost, loginPath, body, "Authorization", ""); resp.Status != http.StatusBadRequest {
					b.Fatal(resp)
				}
			}
		})
	}
}
