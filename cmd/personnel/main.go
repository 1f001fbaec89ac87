// Command personnel runs the Personnel API.
//
//	personnel [serve] [-config file.yaml]   serve the API (the default)
//	personnel migrate [-config file.yaml]   create or update the schema, then exit
//	personnel recount [-config file.yaml]   count every resource again and trust the kept counts
//	personnel reindex [--all]               recount, rebuild the derived structures not trusted yet (--all: every one)
//	personnel user add NAME --role editor   manage users (add, list, passwd, disable, enable, delete, unlock, revoke-token)
//	personnel seed --count 1000000          fill empty resources with realistic data
//	personnel export --resource department  write a resource's records to a CSV, XLSX or JSON file
//	personnel import --resource department FILE   create and update records from such a file
//	personnel audit --resource department   print who changed what (audit prune: apply the retention)
//	personnel healthcheck                   exit 0 when the local server is ready
//	personnel version                       print the build's version and revision
//
// Exit status: 0 when done, 1 when the work failed, 2 for a wrong command
// line. "personnel --help" lists the commands and global flags.
//
// Settings come from the optional YAML file and PERSONNEL_* environment
// variables; see the README for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/logging"
	"personnel/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the command could not do its work
	exitUsage   = 2 // the command line is wrong
)

// usageError is a mistake in the command line, as opposed to a failure of
// the work asked for: it exits with exitUsage.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// quietLogs holds logs below WARN back: commands other than serve report
// what they did on standard output, and their INFO lines (which database,
// schema up to date) only help when asked for with -v.
var quietLogs bool

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// run dispatches a sub-command and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	verbose := false
global:
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-v" || a == "-verbose" || a == "--verbose":
			verbose = true
			args = args[1:]
		case isHelp(a):
			usage(stdout)
			return exitOK
		case a == "-version" || a == "--version":
			fmt.Fprintln(stdout, version())
			return exitOK
		default:
			break global
		}
	}
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	quietLogs = cmd != "serve" && !verbose
	var err error
	switch cmd {
	case "serve":
		err = serve(args, stdout, stderr)
	case "migrate":
		err = migrate(args, stdout, stderr)
	case "recount":
		err = recount(args, stdout, stderr)
	case "reindex":
		err = reindex(args, stdout, stderr)
	case "user":
		// The user commands parse their own arguments; help and a missing
		// sub-command are answered here, as for every other command.
		switch {
		case len(args) == 0:
			fmt.Fprint(stderr, userUsage)
			err = usagef("user: a sub-command is required")
		case isHelp(args[0]):
			fmt.Fprint(stdout, userUsage)
		default:
			err = userCommand(args, osIO(stdout, stderr))
		}
	case "healthcheck":
		err = healthcheck(args, stdout, stderr)
	case "seed":
		err = seedCommand(args, stdout, stderr)
	case "import":
		err = importCommand(args, stdout, stderr)
	case "export":
		err = exportCommand(args, stdout, stderr)
	case "audit":
		err = auditCommand(args, stdout, stderr)
	case "storage":
		err = storageCommand(args, stdout, stderr)
	case "version":
		if err = noArguments("version", args, stdout, stderr); err == nil {
			fmt.Fprintln(stdout, version())
		}
	default:
		fmt.Fprintf(stderr, "personnel: unknown command %q\n\n", cmd)
		usage(stderr)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "personnel:", err)
		return exitUsage
	default:
		fmt.Fprintln(stderr, "personnel:", err)
		return exitFailure
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  personnel [global flags] [command] [flags]

Commands:
  serve [-config file.yaml]      serve the API (the default command)
  migrate [-config file.yaml]    create or update the database schema, then exit
  recount [-config file.yaml]    count every resource again and trust the kept counts
  reindex [--all] [-config file.yaml]
                                 recount, rebuild the search indexes, closures, subtree
                                 and id block counts and change numbers not trusted yet
                                 (--all: every one), and trust them
                                 (after a rolling upgrade: see the README)
  user add|list|passwd|disable|enable|delete|unlock|revoke-token ...
                                 manage who may log in ("personnel user --help")
  seed [--count N] [--resource NAME] [--append] [--seed S]
                                 fill resources with N realistic records each
  export --resource R [--format csv|xlsx|json] [--query Q] [--output FILE]
                                 write the records to a file (standard output by default)
  import --resource R [--dry-run] [--delete-missing] [--mode create] FILE
                                 create and update records from a file, all or nothing
  audit [--resource R] [--record ID] [--since T] [--limit N]
                                 print the audit trail, newest first
  audit prune                    delete the entries older than PERSONNEL_AUDIT_RETENTION
  storage [-config file.yaml]    print the space each resource, each structure kept
                                 beside it, the audit trail and the change feed take
  healthcheck [-config file.yaml]
                                 exit 0 when the server at PERSONNEL_ADDR is ready
                                 (for container health checks)
  version                        print the version and VCS revision
  help                           print this help

Global flags (before the command):
  -h, --help       print this help
  --version        print the version and VCS revision
  -v, --verbose    show INFO logs of commands other than serve (which always
                   shows them); without it they print only what they did

"personnel COMMAND --help" describes a command's flags. Settings come from
the YAML file given with -config and from PERSONNEL_* environment variables
(which win); see the README. Exit status: 0 done, 1 failed, 2 wrong usage.
`)
}

// newFlagSet returns a flag set for a command, whose help (asked for with
// -h or --help) goes to stdout and whose complaints go to stderr.
func newFlagSet(name, synopsis string, args []string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) && a != "help" {
			fs.SetOutput(stdout)
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: personnel %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs; a malformed command line is a usage
// error, and so are arguments the command does not take.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// noArguments checks that a command without flags got none.
func noArguments(name string, args []string, stdout, stderr io.Writer) error {
	return parseFlags(newFlagSet(name, name, args, stdout, stderr), args)
}

// loadConfig parses the sub-command's flags and loads the configuration.
func loadConfig(name, synopsis string, args []string, stdout, stderr io.Writer) (*config.Config, error) {
	fs := newFlagSet(name, name+" [-config file.yaml]\n\n"+synopsis+"\n", args, stdout, stderr)
	path := fs.String("config", "", "YAML file of settings (optional)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	return loadConfigFile(*path, stderr)
}

// loadConfigFile loads the configuration from path (optional) and the
// environment, checks the compiled resources and sets up logging.
func loadConfigFile(path string, stderr io.Writer) (*config.Config, error) {
	cfg, err := config.Load(path, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if err := server.CheckResources(); err != nil {
		return nil, err
	}
	setupLogging(cfg, stderr)
	return cfg, nil
}

// setupLogging installs the default logger: text on a terminal, JSON
// otherwise (or as configured).
func setupLogging(cfg *config.Config, w io.Writer) {
	level := cfg.LogLevel
	if quietLogs && level < slog.LevelWarn {
		level = slog.LevelWarn
	}
	slog.SetDefault(logging.New(w, cfg.LogFormat, level, logging.HoldRequests(cfg.LogHold)))
}

// openDB opens and migrates the database, waiting for it first when it
// does not answer yet.
func openDB(ctx context.Context, cfg *config.Config) (*db.DB, error) {
	d, err := waitForDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return migrateDB(ctx, d, cfg)
}

// migrateDB creates or updates the schema of the open database d, closing
// it when that fails.
func migrateDB(ctx context.Context, d *db.DB, cfg *config.Config) (*db.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	slog.Info("database", "driver", cfg.DBDriver, "flavor", d.Flavor, "version", d.Version, "dsn", cfg.RedactedDSN())
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openExistingDB opens a database that serve or migrate has set up, and
// migrates it like openDB: an empty one (no Personnel tables) is refused,
// on every backend, rather than given a schema by a command that only
// changes users (a DSN naming the wrong database would otherwise get the
// user, and a schema, there).
func openExistingDB(ctx context.Context, cfg *config.Config) (*db.DB, error) {
	d, err := waitForDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := d.Read().User.Query().Exist(ctx); err != nil {
		d.Close()
		if db.IsUndefinedTable(err) {
			return nil, fmt.Errorf("the %s database %s has no Personnel schema: run `personnel migrate` (or start `personnel serve`) against it first", cfg.DBDriver, cfg.RedactedDSN())
		}
		return nil, err
	}
	return migrateDB(ctx, d, cfg)
}

// Bounds of the pause between attempts to reach the database at start.
const (
	firstDBPause = 250 * time.Millisecond
	maxDBPause   = 5 * time.Second
)

// waitForDB opens the database, trying again while it does not answer (a
// database container that is still starting, or restarting with the host)
// with a pause that doubles up to maxDBPause, for at most cfg.DBWait. A
// database that answers with an error (a wrong password, say) is not
// waited for.
func waitForDB(ctx context.Context, cfg *config.Config) (*db.DB, error) {
	start := time.Now()
	pause := firstDBPause
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		d, err := db.Open(actx, cfg)
		cancel()
		switch {
		case err == nil:
			if attempt > 1 {
				slog.Info("the database answers", "attempts", attempt, "waited_s", time.Since(start).Round(time.Millisecond).Seconds())
			}
			return d, nil
		case !db.IsUnavailable(err) || ctx.Err() != nil:
			return nil, err
		case time.Since(start)+pause > cfg.DBWait:
			if attempt == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("the database did not answer in %s (%d attempts; PERSONNEL_DB_WAIT): %w", cfg.DBWait, attempt, err)
		}
		slog.Warn("the database does not answer yet; trying again", "attempt", attempt, "retry_in_s", pause.Seconds(), "error", err)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pause = min(2*pause, maxDBPause)
	}
}

func migrate(args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("migrate", "Create or update the database schema, then exit.", args, stdout, stderr)
	if err != nil {
		return err
	}
	d, err := openDB(context.Background(), cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the schema of %s %s is up to date\n", cfg.DBDriver, cfg.RedactedDSN())
	return d.Close()
}

// recount counts every resource table again (the counts structure) and
// trusts the counts: a repair, or the first trust once no replica that
// does not keep them is left.
func recount(args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("recount", "Count every resource again and trust the kept counts.", args, stdout, stderr)
	if err != nil {
		return err
	}
	return rebuild(cfg, stdout, true, func(s db.Structure) bool { return s.Name() == db.CountStructure },
		"recounted every resource; every replica uses the kept counts within 5 seconds")
}

// reindex rebuilds what the service keeps beside each resource table
// (substring indexes, closures with their subtree counts, the counts)
// where it is not trusted yet, or all of it with --all, and trusts it.
// Replicas may keep serving meanwhile; it refuses, naming them, while a
// replica built for an earlier schema may write without keeping it.
func reindex(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reindex", "reindex [--all] [-config file.yaml]\n\n"+
		"Rebuild the search indexes, hierarchy closures and counts not trusted yet, and trust them.\n", args, stdout, stderr)
	configPath := fs.String("config", "", "YAML file of settings (optional)")
	all := fs.Bool("all", false, "rebuild every structure, trusted or not (a repair, after writes behind the service's back)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfigFile(*configPath, stderr)
	if err != nil {
		return err
	}
	return rebuild(cfg, stdout, *all, nil,
		"rebuilt what needed it; every replica uses the search indexes, closures and counts within 5 seconds")
}

// rebuild runs db.Reindex over every compiled resource, saying what it
// does on stdout.
func rebuild(cfg *config.Config, stdout io.Writer, all bool, only func(db.Structure) bool, done string) error {
	d, err := openDB(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	server.Loaders(d) // registers every compiled resource's table
	err = d.Reindex(context.Background(), all, only, func(t *db.Table, s db.Structure, rebuild bool) {
		if rebuild {
			fmt.Fprintf(stdout, "rebuilding %s of %s\n", s.Name(), t.Name)
		} else {
			fmt.Fprintf(stdout, "keeping %s of %s (trusted; --all rebuilds it too)\n", s.Name(), t.Name)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, done)
	return nil
}

func serve(args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("serve", "Serve the API (the default command).", args, stdout, stderr)
	if err != nil {
		return err
	}
	// Request lines still held are written however serve ends.
	defer logging.Flush(slog.Default())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Every setting is checked before the database is touched: a server
	// that cannot start must not have migrated a schema first.
	if err := auth.CheckSecret(cfg); err != nil {
		return err
	}
	d, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := auth.Bootstrap(ctx, d, cfg); err != nil {
		return err
	}
	ver, rev := buildInfo()
	srv, err := server.New(cfg, d, server.WithVersion(ver), server.WithRevision(rev))
	if err != nil {
		return err
	}
	// A bulk load this process or another did not finish may have left an
	// index dropped.
	if err := d.RestoreIndexes(ctx); err != nil {
		return err
	}
	if err := d.Start(ctx, db.Maintenance{Version: ver, AuditRetention: cfg.AuditRetention, ChangesRetention: cfg.ChangesRetention}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("PERSONNEL_ADDR: %w", err)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	slog.Info("listening", "addr", ln.Addr().String(), "api", "http://"+displayAddr(ln.Addr())+server.APIRoot+"/")

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal now kills the process
	slog.Info("shutting down; letting in-flight requests finish", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		slog.Warn("requests still running at the shutdown timeout were cut off", "error", err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("closing the database: %w", err)
	}
	slog.Info("stopped")
	return nil
}

// healthcheck asks the server listening at PERSONNEL_ADDR whether it is
// ready, for container health checks (the image has no shell or curl): at
// the address's host, or at the loopback address when it listens on every
// interface.
func healthcheck(args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("healthcheck", "Exit 0 when the server at PERSONNEL_ADDR answers /readyz with 200 (for container health checks).", args, stdout, stderr)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + probeAddr(cfg.Addr) + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: /readyz answered %d", resp.StatusCode)
	}
	return nil
}

// probeAddr is where to reach a server listening at addr (host:port) from
// this machine.
func probeAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	switch {
	case host == "" || ip != nil && ip.Equal(net.IPv4zero):
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// displayAddr turns a wildcard listen address into one a person can curl.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

// Version and revision given at build time, which win over what the Go
// toolchain records: a container build has no .git to read them from.
//
//	go build -ldflags "-X main.buildVersion=v1.4.0 -X main.buildRevision=$(git rev-parse HEAD)" ./cmd/personnel
var buildVersion, buildRevision string

// buildInfo returns the version and the VCS revision this binary was built
// from: those given at build time, else the module version and the
// revision the toolchain recorded ("+modified" when the tree had
// uncommitted changes).
func buildInfo() (version, revision string) {
	version, revision = "(unknown)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified {
			revision += "+modified"
		}
	}
	if buildVersion != "" {
		version = buildVersion
	}
	if buildRevision != "" {
		revision = buildRevision
	}
	return version, revision
}

// version is what `personnel version` prints.
func version() string {
	v, rev := buildInfo()
	return fmt.Sprintf("personnel %s, revision %s, %s", v, rev, runtime.Version())
}
