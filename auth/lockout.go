package auth

import (
	"context"
	"fmt"
	"net/netip"

	"personnel/db"
	"personnel/ent/loginfailure"
)

// Unlock lifts a lock-out of the username name, whether or not such a user
// exists, by forgetting the failed logins counted against it; it returns how
// many there were. The failures of the addresses they came from still count.
func Unlock(ctx context.Context, d *db.DB, name string) (int, error) {
	return unlockUser(ctx, d, name)
}

func unlockUser(ctx context.Context, d *db.DB, name string) (int, error) {
	return d.Write().LoginFailure.Delete().
		Where(loginfailure.Subject(userSubject(name))).
		Exec(ctx)
}

// UnlockAddress lifts a lock-out of a client address (an IP address, as the
// service sees clients: see PERSONNEL_TRUSTED_PROXIES) and returns how many
// failed logins from it were forgotten.
func UnlockAddress(ctx context.Context, d *db.DB, addr string) (int, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return 0, fmt.Errorf("%q is not an IP address", addr)
	}
	return d.Write().LoginFailure.Delete().
		Where(loginfailure.SubjectIn(addrSubject(addr), addrSubject(ip.String()), addrSubject(ip.Unmap().String()))).
		Exec(ctx)
}
