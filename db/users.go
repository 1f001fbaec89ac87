package db

import (
	"context"
	"fmt"

	"personnel/casefold"
	"personnel/ent"
	"personnel/ent/user"
)

// fillUsernameKeys gives each user stored before username keys existed
// its key (casefold.Identifier of the name, which the unique index on it
// keeps from being added twice). Where such users are look-alikes, the
// first by id gets the key and the others keep none: they stay distinct
// users who log in by their exact names, no new look-alike can join them,
// and the migration never fails on them. Users without a key are only
// those, so every later start finds little to do.
func (d *DB) fillUsernameKeys(ctx context.Context) error {
	pending, err := d.write.User.Query().Where(user.UsernameKeyIsNil()).Order(ent.Asc(user.FieldID)).All(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	keys, err := d.write.User.Query().Where(user.UsernameKeyNotNil()).Select(user.FieldUsernameKey).Strings(ctx)
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, k := range keys {
		taken[k] = true
	}
	for _, u := range pending {
		k := casefold.Identifier(u.Username)
		if taken[k] {
			continue
		}
		err := d.write.User.UpdateOneID(u.ID).SetUsernameKey(k).Exec(ctx)
		switch {
		case IsUniqueViolation(err): // a user added meanwhile holds it
		case err != nil:
			return fmt.Errorf("filling in the username key of user %d: %w", u.ID, err)
		}
		taken[k] = true
	}
	return nil
}
