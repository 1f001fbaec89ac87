package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"personnel/auth"
	"personnel/config"
)

// userUsage describes the user sub-commands.
const userUsage = `Usage:
  personnel user add NAME --role editor|viewer [--password-stdin]
  personnel user list
  personnel user passwd NAME [--password-stdin]
  personnel user disable NAME [--force]
  personnel user enable NAME
  personnel user delete NAME [--force]
  personnel user unlock NAME
  personnel user unlock --address IP
  personnel user revoke-token NAME

Each takes -config FILE like serve, and works on the database serve uses
(it must exist: serve and migrate create it). Without --password-stdin the
password is asked for twice, without echo. passwd also lifts the user's
login lock-out; unlock lifts one without changing anything else. disable
and delete refuse the last active editor unless given --force.
`

// cmdIO is where a user command reads and writes; tests replace it.
type cmdIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	isTerminal     func() bool
	readPassword   func() ([]byte, error) // reads a line without echo
}

func osIO(stdout, stderr io.Writer) cmdIO {
	fd := int(os.Stdin.Fd())
	return cmdIO{
		stdin: os.Stdin, stdout: stdout, stderr: stderr,
		isTerminal:   func() bool { return term.IsTerminal(fd) },
		readPassword: func() ([]byte, error) { return term.ReadPassword(fd) },
	}
}

// userCommand runs `personnel user ...`.
func userCommand(args []string, cio cmdIO) error {
	if len(args) == 0 {
		fmt.Fprint(cio.stderr, userUsage)
		return usagef("user: a sub-command is required")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("user "+sub, flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	role := fs.String("role", "", "editor or viewer (add only)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input")
	force := fs.Bool("force", false, "disable or delete even the last active editor (disable, delete)")
	address := fs.String("address", "", "lift the lock-out of this client IP address instead of a name's (unlock)")
	names, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{fmt.Errorf("user %s: %w", sub, err)}
	}
	want := map[string]int{"add": 1, "list": 0, "passwd": 1, "disable": 1, "enable": 1, "delete": 1, "unlock": 1, "revoke-token": 1}
	if sub == "unlock" && *address != "" {
		want[sub] = 0
	}
	n, known := want[sub]
	switch {
	case !known:
		fmt.Fprint(cio.stderr, userUsage)
		return usagef("user: unknown sub-command %q", sub)
	case len(names) != n:
		fmt.Fprint(cio.stderr, userUsage)
		return usagef("user %s: takes %d name(s), got %d", sub, n, len(names))
	case sub == "add" && *role == "":
		return usagef("user add: --role editor or --role viewer is required")
	case sub == "add" && *role != auth.RoleEditor && *role != auth.RoleViewer:
		return usagef("user add: unknown role %q; the roles are %s (may write) and %s (may only read)", *role, auth.RoleEditor, auth.RoleViewer)
	case sub != "add" && *role != "":
		return usagef("user %s: --role applies to add only", sub)
	case *force && sub != "disable" && sub != "delete":
		return usagef("user %s: --force applies to disable and delete only", sub)
	case *address != "" && sub != "unlock":
		return usagef("user %s: --address applies to unlock only", sub)
	}
	cfg, err := loadConfigFile(*configPath, cio.stderr)
	if err != nil {
		return err
	}
	if err := requireDatabase(cfg); err != nil {
		return err
	}
	ctx := context.Background()
	d, err := openExistingDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()

	name := ""
	if len(names) > 0 {
		name = names[0]
	}
	switch sub {
	case "add":
		pw, err := readNewPassword(cio, *fromStdin)
		if err != nil {
			return err
		}
		u, err := auth.AddUser(ctx, d, name, *role, pw, cfg.BcryptCost)
		if err != nil {
			return fmt.Errorf("user add %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "added %s (%s)\n", u.Username, *role) // as normalised
	case "list":
		users, err := auth.ListUsers(ctx, d)
		if err != nil {
			return err
		}
		// Look-alikes (names equal but for letter case or width) can only
		// be in a database from before they were refused; each says so.
		alike := auth.LookAlikes(users)
		w := tabwriter.NewWriter(cio.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "USERNAME\tROLE\tACTIVE\tCREATED\tNOTE")
		for _, u := range users {
			note := ""
			if others := alike[u.ID]; len(others) > 0 {
				note = "look-alike of " + strings.Join(others, ", ")
			}
			fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\n", u.Username, u.Role, u.Active, u.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"), note)
		}
		return w.Flush()
	case "passwd":
		pw, err := readNewPassword(cio, *fromStdin)
		if err != nil {
			return err
		}
		if err := auth.SetPassword(ctx, d, name, pw, cfg.BcryptCost); err != nil {
			return fmt.Errorf("user passwd %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "changed the password of %s; its earlier tokens no longer work, and it may log in again at once\n", name)
	case "disable", "enable":
		if err := auth.SetActive(ctx, d, name, sub == "enable", guards(*force)...); err != nil {
			return fmt.Errorf("user %s %s: %w", sub, name, forceHint(err))
		}
		fmt.Fprintf(cio.stdout, "%sd %s\n", sub, name)
	case "delete":
		if err := auth.DeleteUser(ctx, d, name, guards(*force)...); err != nil {
			return fmt.Errorf("user delete %s: %w", name, forceHint(err))
		}
		fmt.Fprintf(cio.stdout, "deleted %s\n", name)
	case "unlock":
		what, n := name, 0
		if *address != "" {
			what = *address
			n, err = auth.UnlockAddress(ctx, d, *address)
		} else {
			n, err = auth.Unlock(ctx, d, name)
		}
		if err != nil {
			return fmt.Errorf("user unlock %s: %w", what, err)
		}
		fmt.Fprintf(cio.stdout, "unlocked %s (forgot %d failed logins)\n", what, n)
	case "revoke-token":
		if err := auth.RevokeToken(ctx, d, name); err != nil {
			return fmt.Errorf("user revoke-token %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "revoked the API key of %s; it stops working within 5 seconds, and the next login issues a new one\n", name)
	}
	return nil
}

// guards are the safeguards of a change of users: all of them, unless the
// operator forces it.
func guards(force bool) []auth.Safeguard {
	if force {
		return nil
	}
	return []auth.Safeguard{auth.KeepAnEditor}
}

// forceHint tells how to override a safeguard's refusal.
func forceHint(err error) error {
	if errors.Is(err, auth.ErrLastEditor) {
		return fmt.Errorf("%w; add another editor first, or pass --force", err)
	}
	return err
}

// requireDatabase refuses a SQLite database file that does not exist. A
// user command changes an installation's users, and opening a mistyped
// path would create a new, empty database and add the user there instead;
// serve and migrate are what create the file on first start.
func requireDatabase(cfg *config.Config) error {
	if cfg.DBDriver != config.DriverSQLite {
		return nil
	}
	path := cfg.DBDSN
	if strings.HasPrefix(path, "file:") {
		u, err := url.Parse(path)
		if err != nil || u.Query().Get("mode") == "memory" {
			return nil // nothing on disk to check; opening it reports a bad URI
		}
		if path = u.Opaque; path == "" {
			path = u.Path
		}
		if path == "" || path == ":memory:" {
			return nil
		}
	}
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("PERSONNEL_DB_DSN: there is no database at %s; check the path and -config (serve and migrate create it on first start)", path)
	case err != nil:
		return fmt.Errorf("PERSONNEL_DB_DSN: %w", err)
	}
	return nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, which the flag package alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readNewPassword reads a password from standard input (one line; the
// line ending is not part of it) or, on a terminal, asks twice without echo.
func readNewPassword(cio cmdIO, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(cio.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if pw == "" {
			return "", errors.New("no password on standard input")
		}
		return pw, nil
	}
	if !cio.isTerminal() {
		return "", errors.New("standard input is not a terminal: pass --password-stdin to read the password from it")
	}
	fmt.Fprint(cio.stderr, "Password: ")
	first, err := cio.readPassword()
	fmt.Fprintln(cio.stderr)
	if err != nil {
		return "", err
	}
	fmt.Fprint(cio.stderr, "Password (again): ")
	second, err := cio.readPassword()
	fmt.Fprintln(cio.stderr)
	if err != nil {
		return "", err
	}
	if string(first) != string(second) {
		return "", errors.New("the passwords differ")
	}
	return string(first), nil
}
