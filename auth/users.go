package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/unicode/norm"

	"personnel/casefold"
	"personnel/config"
	"personnel/db"
	"personnel/ent"
	"personnel/ent/schema"
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
	ErrUserExists   = errors.New("a user with that name already exists (names are compared without regard to letter case or width)")
)

// MinPasswordLength is the shortest password accepted, in characters.
const MinPasswordLength = 8

// MaxPasswordBytes is the longest password accepted, in bytes: bcrypt
// ignores whatever follows, so a longer password would match every
// password that starts the same.
const MaxPasswordBytes = 72

var usernameRE = regexp.MustCompile(`^[\p{L}\p{N}_.@+-]+$`)

// NormaliseUsername returns name in the form it is stored and looked up in:
// compatibility-normalised (NFKC), as Django normalises usernames, so that
// "ａｌｉｃｅ" typed in full width is "alice".
func NormaliseUsername(name string) string { return norm.NFKC.String(name) }

// checkUsername applies Django's rule to a normalised name: 1 to 150
// characters (not bytes), each a letter, a digit or one of @.+-_.
func checkUsername(name string) error {
	if !usernameRE.MatchString(name) || utf8.RuneCountInString(name) > schema.MaxUsername ||
		utf8.RuneCountInString(casefold.Identifier(name)) > casefold.Expansion*schema.MaxUsername {
		return fmt.Errorf("a username is 1 to %d letters, digits and the characters @ . + - _", schema.MaxUsername)
	}
	return nil
}

// checkPasswordForm is the part of the password rules that login applies
// too: a password that breaks it can never have been set, so login refuses
// it without a hash comparison. Login cannot receive a password that is not
// UTF-8 text (JSON decoding replaces such bytes) and refuses a blank one,
// so neither may be set; past 72 bytes bcrypt would compare only a prefix.
func checkPasswordForm(password string) error {
	switch {
	case !utf8.ValidString(password):
		return errors.New("the password must be UTF-8 text")
	case strings.ContainsRune(password, 0):
		return errors.New("the password must not contain NUL characters")
	case strings.TrimSpace(password) == "":
		return errors.New("the password must not be blank")
	case len(password) > MaxPasswordBytes:
		return fmt.Errorf("the password must be at most %d bytes (bcrypt's limit)", MaxPasswordBytes)
	}
	return nil
}

// checkPassword refuses a new password that login could not accept (see
// checkPasswordForm), that is short, or that is the username.
func checkPassword(name, password string) error {
	if err := checkPasswordForm(password); err != nil {
		return err
	}
	switch {
	case utf8.RuneCountInString(password) < MinPasswordLength:
		return fmt.Errorf("the password must have at least %d characters", MinPasswordLength)
	case password == name:
		return errors.New("the password must differ from the username")
	}
	return nil
}

// nextSecond is when tokens without a generation claim, issued up to now,
// stop being valid. They carry whole seconds, so the boundary is rounded
// up: such a token issued in this very second is refused too.
func nextSecond(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }

// AddUser creates a user with a bcrypt hash of password. The name is
// normalised (NormaliseUsername) and must differ from every other user's
// without regard to letter case or character width (ErrUserExists).
func AddUser(ctx context.Context, d *db.DB, name, role, password string, cost int) (*ent.User, error) {
	name = NormaliseUsername(name)
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
		SetUsername(name).SetUsernameKey(casefold.Identifier(name)).
		SetPasswordHash(string(hash)).SetRole(user.Role(role)).
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

// LookAlikes maps the id of each user whose name equals another's without
// regard to letter case or width (possible only in a database that held
// such names before they were refused) to the names of the others.
func LookAlikes(users []*ent.User) map[int][]string {
	byKey := map[string][]*ent.User{}
	for _, u := range users {
		k := casefold.Identifier(u.Username)
		byKey[k] = append(byKey[k], u)
	}
	m := map[int][]string{}
	for _, group := range byKey {
		for _, u := range group {
			for _, o := range group {
				if o != u {
					m[u.ID] = append(m[u.ID], o.Username)
				}
			}
		}
	}
	return m
}

// findUser returns the user name designates: the user of exactly that name
// if there is one (a name stored before names were normalised), else the
// user of its normalised form, else ErrUserNotFound. It costs one query
// either way, so login takes as long for a name that does not exist.
func findUser(ctx context.Context, c *ent.Client, name string, lock bool) (*ent.User, error) {
	q := c.User.Query().Where(user.UsernameIn(name, NormaliseUsername(name)))
	if lock {
		q = q.ForUpdate()
	}
	users, err := q.All(ctx)
	if err != nil {
		return nil, err
	}
	var found *ent.User
	for _, u := range users {
		if found == nil || u.Username == name {
			found = u
		}
	}
	if found == nil {
		return nil, ErrUserNotFound
	}
	return found, nil
}

// upgradeHash stores a new hash of the password just checked when the
// stored one was made at another bcrypt cost than the configured one, as
// Django does: a cheaper hash would also answer wrong passwords faster than
// the dummy comparison for names that do not exist, which tells which names
// do. The update is skipped when the password changed meanwhile.
func upgradeHash(ctx context.Context, d *db.DB, u *ent.User, password string, cost int) error {
	if got, err := bcrypt.Cost([]byte(u.PasswordHash)); err == nil && got == cost {
		return nil
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return err
	}
	_, err = d.Write().User.Update().
		Where(user.ID(u.ID), user.PasswordHash(u.PasswordHash)).
		SetPasswordHash(string(hash)).
		Save(ctx)
	return err
}

// SetPassword changes a user's password, invalidates the tokens issued
// before (within the user cache's lifetime on every replica) and lifts a
// lock-out of the user's name.
func SetPassword(ctx context.Context, d *db.DB, name, password string, cost int) error {
	u, err := findUser(ctx, d.Read(), name, false)
	if err != nil {
		return err
	}
	if err := checkPassword(u.Username, password); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return err
	}
	err = updateUser(ctx, d, name, nil, func(u *ent.UserUpdateOne) {
		u.SetPasswordHash(string(hash)).AddTokenGeneration(1).SetTokensValidAfter(nextSecond(time.Now()))
	})
	if err != nil {
		return err
	}
	_, err = unlockUser(ctx, d, name)
	return err
}

// SetActive enables or disables a user. Disabling also invalidates every
// token the user holds, so enabling again does not revive them; guards
// may refuse it (ErrLastEditor).
func SetActive(ctx context.Context, d *db.DB, name string, active bool, guards ...Safeguard) error {
	var check func(context.Context, *ent.Client, *ent.User) error
	if !active {
		check = keepingAnEditor(d, guards)
	}
	return updateUser(ctx, d, name, check, func(u *ent.UserUpdateOne) {
		u.SetActive(active)
		if !active {
			u.AddTokenGeneration(1).SetTokensValidAfter(nextSecond(time.Now()))
		}
	})
}

// DeleteUser removes a user; guards may refuse it (ErrLastEditor).
func DeleteUser(ctx context.Context, d *db.DB, name string, guards ...Safeguard) error {
	check := keepingAnEditor(d, guards)
	return d.InEntTx(ctx, func(tx *ent.Client) error {
		u, err := findUser(ctx, tx, name, !d.SQLite())
		if err != nil {
			return err
		}
		if err := check(ctx, tx, u); err != nil {
			return err
		}
		err = tx.User.DeleteOneID(u.ID).Exec(ctx)
		if ent.IsNotFound(err) {
			return ErrUserNotFound
		}
		return err
	})
}

// updateUser changes the user name designates, in a transaction in which
// check (when not nil) may refuse the change.
func updateUser(ctx context.Context, d *db.DB, name string, check func(context.Context, *ent.Client, *ent.User) error, set func(*ent.UserUpdateOne)) error {
	return d.InEntTx(ctx, func(tx *ent.Client) error {
		u, err := findUser(ctx, tx, name, !d.SQLite())
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(ctx, tx, u); err != nil {
				return err
			}
		}
		up := tx.User.UpdateOneID(u.ID)
		set(up)
		err = up.Exec(ctx)
		if ent.IsNotFound(err) {
			return ErrUserNotFound
		}
		return err
	})
}

// Safeguard is a rule a change of users keeps when asked to.
type Safeguard int

// KeepAnEditor refuses to disable or delete the last active editor: the
// API would be read-only for everyone until someone adds an editor.
const KeepAnEditor Safeguard = 1

// ErrLastEditor is the refusal of KeepAnEditor.
var ErrLastEditor = errors.New("this is the last active editor: without one, nobody can change data through the API")

// keepingAnEditor returns the check of KeepAnEditor when guards hold it,
// else a check that passes. On MySQL and PostgreSQL it locks the active
// editors' rows, so two replicas disabling the last two editors at once
// cannot both succeed; SQLite runs one write transaction at a time.
func keepingAnEditor(d *db.DB, guards []Safeguard) func(context.Context, *ent.Client, *ent.User) error {
	return func(ctx context.Context, tx *ent.Client, u *ent.User) error {
		if !slices.Contains(guards, KeepAnEditor) || !u.Active || u.Role != user.RoleEditor {
			return nil
		}
		q := tx.User.Query().Where(user.RoleEQ(user.RoleEditor), user.Active(true))
		if !d.SQLite() { // MySQL and PostgreSQL run writers concurrently
			q = q.ForUpdate()
		}
		ids, err := q.IDs(ctx)
		if err != nil {
			return err
		}
		if len(ids) <= 1 {
			return ErrLastEditor
		}
		return nil
	}
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
