package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/ent/authtoken"
)

// The key's row is what `user revoke-token` deletes; how the API then
// refuses the key is server/token_test.go's subject.
func TestUserRevokeToken_DeletesTheUsersKey(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			useBackend(t, b)
			f := &fakeIO{stdin: "first-password\n"}
			if err := user(t, f, "add", "alice", "--role", "viewer", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load("", os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			d, err := db.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			u, err := d.Read().User.Query().Only(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Write().AuthToken.Create().SetUserID(u.ID).SetSalt("s").SetKeyHash("h").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if err := user(t, f, "revoke-token", "alice"); err != nil || !strings.Contains(f.stdout.String(), "revoked") {
				t.Fatalf("revoke-token: %v %s", err, f.stdout.String())
			}
			if n, _ := d.Read().AuthToken.Query().Where(authtoken.UserID(u.ID)).Count(ctx); n != 0 {
				t.Fatalf("%d keys left", n)
			}
			if err := user(t, f, "revoke-token", "nobody"); err == nil || !strings.Contains(err.Error(), auth.ErrUserNotFound.Error()) {
				t.Fatalf("revoke-token of an unknown user: %v", err)
			}
		})
	}
}

// revoke-token finds a user by the name as typed or by its normalised
// form, as disable and the other user commands do: a name typed in full
// width finds the user added in ASCII.
func TestUserRevokeToken_FindsTheUserAsTheOtherCommandsDo(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := useBackend(t, b)
			f := &fakeIO{stdin: "first-password\n"}
			if err := user(t, f, "add", "alice", "--role", "viewer", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			d, err := db.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			u, err := d.Read().User.Query().Only(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Write().AuthToken.Create().SetUserID(u.ID).SetSalt("s").SetKeyHash("h").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			const fullWidth = "ａｌｉｃｅ"
			if err := user(t, f, "disable", fullWidth); err != nil {
				t.Fatalf("disable %s: %v", fullWidth, err)
			}
			if err := user(t, f, "revoke-token", fullWidth); err != nil {
				t.Fatalf("revoke-token %s: %v", fullWidth, err)
			}
			if n, _ := d.Read().AuthToken.Query().Where(authtoken.UserID(u.ID)).Count(ctx); n != 0 {
				t.Fatalf("%d keys left", n)
			}
		})
	}
}
