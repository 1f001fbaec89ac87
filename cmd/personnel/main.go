// Command personnel runs the Personnel API.
//
//	personnel [serve] [-config file.yaml]   serve the API (the default)
//	personnel migrate [-config file.yaml]   create or update the schema, then exit
//	personnel user add NAME --role editor   manage users (add, list, passwd, disable, enable, delete)
//	personnel seed --count 1000000          fill empty resources with realistic data
//	personnel healthcheck                   exit 0 when the local server is ready
//	personnel version                       print the build's version
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

// run dispatches a sub-command and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args, stderr)
	case "migrate":
		err = migrate(args, stderr)
	case "user":
		err = userCommand(args, osIO(stdout, stderr))
	case "healthcheck":
		err = healthcheck(args, stderr)
	case "seed":
		err = seedCommand(args, stderr)
	case "version":
		fmt.Fprintln(stdout, version())
	case "help", "-h", "--help":
		usage(stdout)
	default:
		fmt.Fprintf(stderr, "personnel: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "personnel:", err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  personnel [serve] [-config file.yaml]   serve the API (the default)
  personnel migrate [-config file.yaml]   create or update the database schema, then exit
  personnel user add|list|passwd|disable|enable|delete ...
                                          manage who may log in ("personnel user" for details)
  personnel seed [--count N] [--resource NAME] [--seed S]
                                          fill empty resources with N realistic records each
  personnel healthcheck [-config file.yaml]
                                          exit 0 when the local server is ready (for container health checks)
  personnel version                       print the version

Settings come from the YAML file given with -config and from PERSONNEL_*
environment variables (which win); see the README.
`)
}

// loadConfig parses the sub-command's flags and loads the configuration.
func loadConfig(name string, args []string, stderr io.Writer) (*config.Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML file of settings (optional)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
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
	slog.SetDefault(logging.New(w, cfg.LogFormat, cfg.LogLevel))
}

// openDB opens and migrates the database.
func openDB(ctx context.Context, cfg *config.Config) (*db.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	d, err := db.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	slog.Info("database", "driver", cfg.DBDriver, "flavor", d.Flavor, "version", d.Version, "dsn", cfg.RedactedDSN())
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func migrate(args []string, stderr io.Writer) error {
	cfg, err := loadConfig("migrate", args, stderr)
	if err != nil {
		return err
	}
	d, err := openDB(context.Background(), cfg)
	if err != nil {
		return err
	}
	slog.Info("schema is up to date")
	return d.Close()
}

func serve(args []string, stderr io.Writer) error {
	cfg, err := loadConfig("serve", args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	d, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := auth.Bootstrap(ctx, d, cfg); err != nil {
		return err
	}
	srv, err := server.New(cfg, d, server.WithVersion(version()))
	if err != nil {
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

// healthcheck asks the server listening at PERSONNEL_ADDR on this host
// whether it is ready, for container health checks (the image has no
// shell or curl).
func healthcheck(args []string, stderr io.Writer) error {
	cfg, err := loadConfig("healthcheck", args, stderr)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(cfg.Addr)
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: /readyz answered %d", resp.StatusCode)
	}
	return nil
}

// displayAddr turns a wildcard listen address into one a person can curl.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "personnel (unknown version)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return "personnel " + v + " " + bi.GoVersion
}
