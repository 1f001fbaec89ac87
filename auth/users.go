package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"personnel/config"
	"personnel/db"
	"personnel/ent"
	"personnel/ent/user"
)

// Roles a user can have.
const (
	RoleEditor = "editor" // may read and write
	RoleViewer = "viewer" // may only read
)

// Errors of user management.
var (
	ErrUserNotFound = errors.New("no such user")
	ErrUserExists   = errors.New("a user with that name already exists")
)

// MinPasswordLength is the shortest password accepted, in characters.
const MinPasswordLength = 8

var usernameRE = regexp.MustCompile(`^[\p{L}\p{N}_.@+-]{1,150}$`)

// checkUsername applies Django's rule: up to 150 letters, digits and @.+-_.
func checkUsername(name string) error {
	if !usernameRE.MatchString(name) {
		return errors.New("a username is 1 to 150 letters, digits and the characters @ . + - _")
	}
	return nil
}

// checkPassword refuses passwords that are short, the username, or longer
// than bcrypt can hash (72 bytes).
func checkPassword(name, password string) error {
	switch {
	case utf8.RuneCountInString(password) < MinPasswordLength:
		return fmt.Errorf("the password must have at least %d characters", MinPasswordLength)
	case len(password) > 72:
		return errors.New("the password must be at most 72 bytes (bcrypt's limit)")
	case password == name:
		return errors.New("the password must differ from the username")
	}
	return nil
}

// nextSecond is when tokens issued up to now stop being valid. Tokens carry
// whole seconds, so the boundary is rounded up: a token issued in this very
// second is refused too.
func nextSecond(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }

// AddUser creates a user with a bcrypt hash of password.
func AddUser(ctx context.Context, d *db.DB, name, role, password string, cost int) (*ent.User, error) {
	if err := checkUsername(name); err != nil {
		return nil, err
	}
	if role != RoleEditor && role != RoleViewer {
		return nil, fmt.Errorf("role must be %q or %q", RoleEditor, RoleViewer)
	}
	if err := checkPassword(name, password); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return nil, err
	}
	u, err := d.Write().User.Create().
		SetUsername(name).SetPasswordHash(string(hash)).SetRole(user.Role(role)).
		Save(ctx)
	if db.IsUniqueViolation(err) {
		return nil, ErrUserExists
	}
	return u, err
}

// ListUsers returns every user, by name.
func ListUsers(ctx context.Context, d *db.DB) ([]*ent.User, error) {
	return d.Read().User.Query().Order(ent.Asc(user.FieldUsername)).All(ctx)
}

// SetPassword changes a user's password and invalidates the tokens issued
// before, within the user cache's lifetime on every replica.
func SetPassword(ctx context.Context, d *db.DB, name, password string, cost int) error {
	if err := checkPassword(name, password); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return err
	}
	return updateUser(ctx, d, name, func(u *ent.UserUpdate) {
		u.SetPasswordHash(string(hash)).SetTokensValidAfter(nextSecond(time.Now()))
	})
}

// SetActive enables or disables a user. Disabling also invalidates every
// token the user holds, so enabling again does not revive them.
func SetActive(ctx context.Context, d *db.DB, name string, active bool) error {
	return updateUser(ctx, d, name, func(u *ent.UserUpdate) {
		u.SetActive(active)
		if !active {
			u.SetTokensValidAfter(nextSecond(time.Now()))
		}
	})
}

// DeleteUser removes a user.
func DeleteUser(ctx context.Context, d *db.DB, name string) error {
	n, err := d.Write().User.Delete().Where(user.Username(name)).Exec(ctx)
	if err == nil && n == 0 {
		return ErrUserNotFound
	}
	return err
}

func updateUser(ctx context.Context, d *db.DB, name string, set func(*ent.UserUpdate)) error {
	u := d.Write().User.Update().Where(user.Username(name))
	set(u)
	n, err := u.Save(ctx)
	if err == nil && n == 0 {
		return ErrUserNotFound
	}
	return err
}

// Bootstrap makes sure someone can log in to a new installation: when the
// database has no user and PERSONNEL_ADMIN_USER/PASSWORD are set, it
// creates that editor; when they are not set it says how to create one.
// Replicas starting together may both try; the unique username lets one win.
func Bootstrap(ctx context.Context, d *db.DB, cfg *config.Config) error {
	n, err := d.Read().User.Query().Count(ctx)
	if err != nil || n > 0 {
		return err
	}
	if cfg.AdminUser == "" {
		slog.Warn(`no users yet: create one with "personnel user add NAME --role editor", or set PERSONNEL_ADMIN_USER and PERSONNEL_ADMIN_PASSWORD and restart`)
		return nil
	}
	_, err = AddUser(ctx, d, cfg.AdminUser, RoleEditor, cfg.AdminPassword, cfg.BcryptCost)
	switch {
	case errors.Is(err, ErrUserExists):
		return nil
	case err != nil:
		return fmt.Errorf("PERSONNEL_ADMIN_USER/PASSWORD: creating the first editor: %w", err)
	}
	slog.Info("created the first editor from PERSONNEL_ADMIN_USER", "username", cfg.AdminUser)
	return nil
}
