package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"personnel/auth"
)

// userUsage describes the user sub-commands.
const userUsage = `Usage:
  personnel user add NAME --role editor|viewer [--password-stdin]
  personnel user list
  personnel user passwd NAME [--password-stdin]
  personnel user disable NAME
  personnel user enable NAME
  personnel user delete NAME
  personnel user revoke-token NAME

Each takes -config FILE like serve, and works on the database serve uses.
Without --password-stdin the password is asked for twice, without echo.
`

// io is where a user command reads and writes; tests replace it.
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
		return errors.New("user: a sub-command is required")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("user "+sub, flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	role := fs.String("role", "", "editor or viewer (add only)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input")
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	want := map[string]int{"add": 1, "list": 0, "passwd": 1, "disable": 1, "enable": 1, "delete": 1, "revoke-token": 1}
	n, known := want[sub]
	switch {
	case !known:
		fmt.Fprint(cio.stderr, userUsage)
		return fmt.Errorf("user: unknown sub-command %q", sub)
	case len(names) != n:
		fmt.Fprint(cio.stderr, userUsage)
		return fmt.Errorf("user %s: takes %d name(s), got %d", sub, n, len(names))
	case sub == "add" && *role != auth.RoleEditor && *role != auth.RoleViewer:
		return errors.New("user add: --role editor or --role viewer is required")
	case sub != "add" && *role != "":
		return fmt.Errorf("user %s: --role applies to add only", sub)
	}
	cfg, err := loadConfigFile(*configPath, cio.stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	d, err := openDB(ctx, cfg)
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
		if _, err := auth.AddUser(ctx, d, name, *role, pw, cfg.BcryptCost); err != nil {
			return fmt.Errorf("user add %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "added %s (%s)\n", name, *role)
	case "list":
		users, err := auth.ListUsers(ctx, d)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(cio.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "USERNAME\tROLE\tACTIVE\tCREATED")
		for _, u := range users {
			fmt.Fprintf(w, "%s\t%s\t%t\t%s\n", u.Username, u.Role, u.Active, u.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
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
		fmt.Fprintf(cio.stdout, "changed the password of %s; its earlier tokens no longer work\n", name)
	case "disable", "enable":
		if err := auth.SetActive(ctx, d, name, sub == "enable"); err != nil {
			return fmt.Errorf("user %s %s: %w", sub, name, err)
		}
		fmt.Fprintf(cio.stdout, "%sd %s\n", sub, name)
	case "delete":
		if err := auth.DeleteUser(ctx, d, name); err != nil {
			return fmt.Errorf("user delete %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "deleted %s\n", name)
	case "revoke-token":
		if err := auth.RevokeToken(ctx, d, name); err != nil {
			return fmt.Errorf("user revoke-token %s: %w", name, err)
		}
		fmt.Fprintf(cio.stdout, "revoked the API key of %s; it stops working within 5 seconds, and the next login issues a new one\n", name)
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
