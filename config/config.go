// Package config holds Personnel's settings: one Config struct whose
// defaults run the service with nothing set, an optional flat YAML file, and
// PERSONNEL_* environment variables, applied in that order.
//
// Every setting is one row of the settings table below; defaults, the YAML
// keys, the environment names, parsing and the README's table all come from
// that row, so they cannot disagree. A bad value fails with a message that
// names the setting where it was given.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	yaml "go.yaml.in/yaml/v3"
)

// Database drivers.
const (
	DriverSQLite   = "sqlite"
	DriverMySQL    = "mysql"
	DriverPostgres = "postgres"
)

// Flavors of MySQL-compatible servers PERSONNEL_DB_FLAVOR may force; they
// are normally detected from the server's version.
const (
	FlavorAuto    = "auto"
	FlavorMySQL   = "mysql"
	FlavorMariaDB = "mariadb"
	FlavorTiDB    = "tidb"
)

// Config is every setting of the service.
type Config struct {
	Addr              string         // listen address
	DBDriver          string         // DriverSQLite, DriverMySQL or DriverPostgres
	DBDSN             string         // SQLite file path, a go-sql-driver/mysql DSN, or a PostgreSQL URL or keyword DSN
	DBFlavor          string         // FlavorAuto, or the MySQL-compatible server to assume
	DBMaxOpenConns    int            // 0: chosen per driver
	DBTimeout         time.Duration  // longest a request may wait on the database
	DBWait            time.Duration  // how long start-up waits for the database; 0: try once
	PublicURL         *url.URL       // base of next/previous/Location links; nil: from the request
	AllowedHosts      []string       // Host header values served (Django's ALLOWED_HOSTS); empty: any
	PageSizeMax       int            // page_size above this is clamped
	StrictQuery       bool           // malformed page_size and ordering are 400s, not ignored
	TreeNodeLimit     int            // most nodes in one tree answer
	MoveLimit         int            // most closure rows one move may rewrite
	AuditRetention    time.Duration  // how long audit entries are kept; 0: for ever
	AuditViewers      bool           // viewers may read the audit trail
	ChangesRetention  time.Duration  // how long the change feed keeps deletions (and superseded entries)
	TrustedProxies    []netip.Prefix // peers whose X-Forwarded-* headers are believed
	BodyLimit         int64          // largest request body in bytes
	ImportLimit       int64          // largest file an import takes, in bytes
	ImportRows        int            // most rows of an imported file
	BulkLimit         int            // most elements of a bulk create
	ShutdownTimeout   time.Duration  // how long in-flight requests get on SIGTERM
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	CORSOrigins       []string // origins allowed to call the API from a browser; "*" for any
	Metrics           bool     // serve /metrics
	AdminUI           bool     // serve the admin UI at /admin/
	LogLevel          slog.Level
	LogFormat         string        // "text", "json" or "auto" (text on a terminal)
	LogHold           time.Duration // longest a request's line waits to be written with others
	Without           Mechanisms    // performance mechanisms turned off, to measure what they win

	Env                string        // "development" or "production"
	JWTSecret          []byte        // nil: generated beside the SQLite database
	JWTAlgorithm       string        // HS256, HS384 or HS512
	JWTTTL             time.Duration // lifetime of a token
	JWTRefreshWindow   time.Duration // how long after login a token may be refreshed
	AdminUser          string        // first editor, created when there is no user
	AdminPassword      string
	BcryptCost         int
	LoginFailuresUser  int           // failed logins for one username before 429
	LoginFailuresAddr  int           // failed logins from one address before 429
	LoginFailureWindow time.Duration // how long a failed login counts
	AuthSchemes        []string      // "jwt", "token", "basic": the credentials API requests may carry
}

// AuthSchemeNames are the authentication schemes, in the order the
// contract's challenges list them.
var AuthSchemeNames = []string{"jwt", "token", "basic"}

// Environments.
const (
	EnvDevelopment = "development"
	EnvProduction  = "production"
)

// MinJWTSecret is the shortest JWT secret accepted, in bytes.
const MinJWTSecret = 32

// Setting describes one configuration setting.
type Setting struct {
	Env     string // environment variable
	Key     string // key in the YAML file
	Default string // value when nothing is set, in the form it is written
	Doc     string // one line for the README

	set func(c *Config, v string) error
}

// Secret reports whether the setting holds a secret: its value is never
// shown, and it may also be given as the path of a file holding it, in
// FileEnv (and the YAML key with "_file"), as container secrets are.
func (s Setting) Secret() bool { return secretSettings[s.Env] }

// FileEnv is the variable naming a file that holds the setting's value,
// for a secret setting; "" for others.
func (s Setting) FileEnv() string {
	if !s.Secret() {
		return ""
	}
	return s.Env + "_FILE"
}

// secretSettings are the settings that hold secrets.
var secretSettings = map[string]bool{
	"PERSONNEL_DB_DSN":         true,
	"PERSONNEL_JWT_SECRET":     true,
	"PERSONNEL_ADMIN_PASSWORD": true,
}

// Settings returns the settings table, in README order.
func Settings() []Setting { return settings }

var settings = []Setting{
	{"PERSONNEL_ADDR", "addr", "127.0.0.1:8000", "Address to listen on (`host:port`). The default serves this machine only, as `manage.py runserver` does; `0.0.0.0:8000` (or `:8000`) serves every interface, as the container image does.",
		func(c *Config, v string) error {
			if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
				return errors.New(`must be "host:port" or ":port"`)
			}
			c.Addr = v
			return nil
		}},
	{"PERSONNEL_DB_DRIVER", "db_driver", DriverSQLite, "`sqlite` (embedded, the default), `mysql` (MySQL, MariaDB or TiDB) or `postgres` (PostgreSQL).",
		func(c *Config, v string) error {
			if v != DriverSQLite && v != DriverMySQL && v != DriverPostgres {
				return fmt.Errorf("must be %q, %q or %q", DriverSQLite, DriverMySQL, DriverPostgres)
			}
			c.DBDriver = v
			return nil
		}},
	{"PERSONNEL_DB_DSN", "db_dsn", "personnel.db", "SQLite: path of the database file (created with its directory on first start). MySQL: a go-sql-driver DSN, e.g. `user:pass@tcp(db:3306)/personnel`. PostgreSQL: a URL or keyword DSN, e.g. `postgres://user:pass@db:5432/personnel`. Also read from the file `PERSONNEL_DB_DSN_FILE` names.",
		func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("must not be empty")
			}
			c.DBDSN = v
			return nil
		}},
	{"PERSONNEL_DB_FLAVOR", "db_flavor", FlavorAuto, "MySQL only: `auto` (detected from the server's version, the default), or `mysql`, `mariadb` or `tidb` to force how the service behaves (TiDB has no shared row locks, so exclusive ones are taken).",
		func(c *Config, v string) error {
			switch v {
			case FlavorAuto, FlavorMySQL, FlavorMariaDB, FlavorTiDB:
				c.DBFlavor = v
				return nil
			}
			return fmt.Errorf("must be %q, %q, %q or %q", FlavorAuto, FlavorMySQL, FlavorMariaDB, FlavorTiDB)
		}},
	{"PERSONNEL_DB_MAX_OPEN_CONNS", "db_max_open_conns", "0", "Most open database connections; `0` picks 16 for MySQL and PostgreSQL and 2 x CPUs (at least 4) readers for SQLite, which always has one writer.",
		func(c *Config, v string) error { return nonNegativeInt(&c.DBMaxOpenConns, v) }},
	{"PERSONNEL_DB_TIMEOUT", "db_timeout", "5s", "Longest a request may take, from the moment its body has arrived, to get its answers from the database; past it the request gets 503 instead of hanging on a database that does not answer.",
		func(c *Config, v string) error { return positiveDuration(&c.DBTimeout, v) }},
	{"PERSONNEL_DB_WAIT", "db_wait", "60s", "How long `serve`, `migrate` and the other commands wait at start for a database that does not answer yet (a database container still starting), retrying with back-off and logging each attempt, before giving up; `0s` tries once.",
		func(c *Config, v string) error { return nonNegativeDuration(&c.DBWait, v) }},
	{"PERSONNEL_PUBLIC_URL", "public_url", "", "Base URL of the service as clients see it (`https://hr.example.com`); used for `next`, `previous` and `Location`. Empty: taken from each request.",
		func(c *Config, v string) error {
			if v == "" {
				c.PublicURL = nil
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				return errors.New("must be an absolute http or https URL without query, fragment or credentials")
			}
			u.Path = strings.TrimRight(u.Path, "/")
			u.RawPath = ""
			c.PublicURL = u
			return nil
		}},
	{"PERSONNEL_ALLOWED_HOSTS", "allowed_hosts", "", "Comma-separated host names the service answers to, as Django's `ALLOWED_HOSTS`: `hr.example.com` exactly, `.example.com` that domain and every subdomain, `*` any; a request with another `Host` gets 400 (`/healthz`, `/readyz` and `/metrics` excepted), and so does one whose port is not digits (`127.0.0.1:evil.com`) whatever this says. Empty: any host in development; with `PERSONNEL_ENV=production` it is required unless `PERSONNEL_PUBLIC_URL` is set.",
		func(c *Config, v string) error {
			c.AllowedHosts = nil
			for _, h := range strings.Split(v, ",") {
				h = strings.ToLower(strings.TrimSpace(h))
				if h == "" {
					continue
				}
				if strings.ContainsAny(h, "/@ ") {
					return fmt.Errorf("%q is not a host name such as hr.example.com, .example.com or *", h)
				}
				c.AllowedHosts = append(c.AllowedHosts, h)
			}
			return nil
		}},
	{"PERSONNEL_PAGE_SIZE_MAX", "page_size_max", "1000", "Largest `page_size`; larger requests are clamped to it.",
		func(c *Config, v string) error { return positiveInt(&c.PageSizeMax, v) }},
	{"PERSONNEL_STRICT_QUERY", "strict_query", "false", "`true`: a `page_size` that is not a positive integer, unknown, malformed or repeated `ordering` terms, and an unknown query parameter (a filter on an undeclared field or lookup among them) on a list, descendants or tree request are each a 400 naming the parameter. `false`: they are ignored, as the Django REST Framework service existing clients were written against does.",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New(`must be "true" or "false"`)
			}
			c.StrictQuery = b
			return nil
		}},
	{"PERSONNEL_TREE_NODE_LIMIT", "tree_node_limit", "10000", "Most nodes one `/tree/` answer may hold; larger trees get 400 asking for `root` or `depth`.",
		func(c *Config, v string) error { return positiveInt(&c.TreeNodeLimit, v) }},
	{"PERSONNEL_MOVE_LIMIT", "move_limit", "200000", "Most rows of the hierarchy index (the closure) one move may rewrite: the records moved times the levels they leave and join. A larger move is refused with a 400 that says how many records it would move (move part of the subtree first); the default keeps a move well inside `PERSONNEL_DB_TIMEOUT` on two cores.",
		func(c *Config, v string) error { return positiveInt(&c.MoveLimit, v) }},
	{"PERSONNEL_AUDIT_RETENTION", "audit_retention", "", "How long audit entries are kept, as a duration (`400d`, `720h`); older ones are pruned in small batches by the running service (and by `personnel audit prune`). Empty: kept for ever.",
		func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				c.AuditRetention = 0
				return nil
			}
			return days(&c.AuditRetention, v, 0)
		}},
	{"PERSONNEL_AUDIT_VIEWERS", "audit_viewers", "false", "`true`: viewers may read the audit trail (`/audit/`, a record's `history/`) too; `false`: editors only.",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New(`must be "true" or "false"`)
			}
			c.AuditViewers = b
			return nil
		}},
	{"PERSONNEL_CHANGES_RETENTION", "changes_retention", "7d", "How long the change feed keeps a deletion (and an entry a later one of the same record supersedes); a consumer whose cursor is older gets 410 and reads the list again. At least `1d`.",
		func(c *Config, v string) error { return days(&c.ChangesRetention, v, 24*time.Hour) }},
	{"PERSONNEL_TRUSTED_PROXIES", "trusted_proxies", "", "Comma-separated IPs or CIDRs of reverse proxies whose `X-Forwarded-For`, `-Proto` and `-Host` are believed. Empty: none.",
		func(c *Config, v string) error {
			c.TrustedProxies = nil
			for _, s := range strings.Split(v, ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				p, err := netip.ParsePrefix(s)
				if err != nil {
					a, aerr := netip.ParseAddr(s)
					if aerr != nil {
						return fmt.Errorf("%q is neither an IP address nor a CIDR", s)
					}
					p = netip.PrefixFrom(a, a.BitLen())
				}
				c.TrustedProxies = append(c.TrustedProxies, p.Masked())
			}
			return nil
		}},
	{"PERSONNEL_BODY_LIMIT", "body_limit", "1048576", "Largest request body in bytes; larger bodies get 413.",
		func(c *Config, v string) error {
			var n int
			if err := positiveInt(&n, v); err != nil {
				return err
			}
			c.BodyLimit = int64(n)
			return nil
		}},
	{"PERSONNEL_IMPORT_LIMIT", "import_limit", "52428800", "Largest file an import takes, in bytes; larger files get 413.",
		func(c *Config, v string) error {
			var n int
			if err := positiveInt(&n, v); err != nil {
				return err
			}
			c.ImportLimit = int64(n)
			return nil
		}},
	{"PERSONNEL_IMPORT_ROWS", "import_rows", "1000000", "Most rows of an imported file; more get 413.",
		func(c *Config, v string) error { return positiveInt(&c.ImportRows, v) }},
	{"PERSONNEL_BULK_LIMIT", "bulk_limit", "1000", "Most elements of a JSON array POSTed to a collection (a bulk create); more get 413.",
		func(c *Config, v string) error { return positiveInt(&c.BulkLimit, v) }},
	{"PERSONNEL_SHUTDOWN_TIMEOUT", "shutdown_timeout", "15s", "How long in-flight requests may run after SIGINT/SIGTERM before the server closes.",
		func(c *Config, v string) error { return positiveDuration(&c.ShutdownTimeout, v) }},
	{"PERSONNEL_READ_HEADER_TIMEOUT", "read_header_timeout", "10s", "Longest time to read a request's headers.",
		func(c *Config, v string) error { return positiveDuration(&c.ReadHeaderTimeout, v) }},
	{"PERSONNEL_READ_TIMEOUT", "read_timeout", "30s", "Longest time to read a whole request.",
		func(c *Config, v string) error { return positiveDuration(&c.ReadTimeout, v) }},
	{"PERSONNEL_WRITE_TIMEOUT", "write_timeout", "60s", "Longest time to answer a request, from the end of its headers.",
		func(c *Config, v string) error { return positiveDuration(&c.WriteTimeout, v) }},
	{"PERSONNEL_IDLE_TIMEOUT", "idle_timeout", "120s", "How long an idle keep-alive connection stays open.",
		func(c *Config, v string) error { return positiveDuration(&c.IdleTimeout, v) }},
	{"PERSONNEL_CORS_ORIGINS", "cors_origins", "", "Comma-separated origins (`https://hr.example.com`) whose browser pages may call the API; `*` for any. Empty: none.",
		func(c *Config, v string) error {
			c.CORSOrigins = nil
			for _, o := range strings.Split(v, ",") {
				o = strings.TrimRight(strings.TrimSpace(o), "/")
				if o == "" {
					continue
				}
				if o != "*" {
					u, err := url.Parse(o)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
						return fmt.Errorf("%q is not an origin such as https://hr.example.com", o)
					}
				}
				c.CORSOrigins = append(c.CORSOrigins, o)
			}
			return nil
		}},
	{"PERSONNEL_METRICS", "metrics", "true", "Serve Prometheus metrics at `/metrics` (no authentication; keep the port private or set `false`).",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New(`must be "true" or "false"`)
			}
			c.Metrics = b
			return nil
		}},
	{"PERSONNEL_ADMIN_UI", "admin_ui", "true", "Serve the admin UI at `/admin/` (sign in as a user; see `docs/admin-ui.md`); `false` turns it off and `/admin/` answers 404. The API reference page at `/personnel/api/docs/` is served either way.",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New(`must be "true" or "false"`)
			}
			c.AdminUI = b
			return nil
		}},
	{"PERSONNEL_LOG_LEVEL", "log_level", "info", "`debug`, `info`, `warn` or `error`.",
		func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return errors.New(`must be "debug", "info", "warn" or "error"`)
			}
			return nil
		}},
	{"PERSONNEL_LOG_FORMAT", "log_format", "auto", "`text`, `json`, or `auto` (text on a terminal, JSON otherwise).",
		func(c *Config, v string) error {
			switch v {
			case "text", "json", "auto":
				c.LogFormat = v
				return nil
			}
			return errors.New(`must be "text", "json" or "auto"`)
		}},
	{"PERSONNEL_LOG_HOLD", "log_hold", "100ms", "How long a request's JSON log line may wait to be written with others (a busy server then writes its lines in one go instead of one `write` each); `0s` writes each at once. Lines still waiting are written on shutdown, and lost if the process is killed; the lines of 401, 403 and 429 answers (the security record) and every warning and error never wait.",
		func(c *Config, v string) error { return nonNegativeDuration(&c.LogHold, v) }},
	{"PERSONNEL_WITHOUT", "without", "", "Performance mechanisms to turn off, comma-separated, to measure what each wins (`go run ./cmd/loadtest -without`; docs/performance.md): `id_blocks`, `stored_count`, `count_cache`, `planner`, `group_commit`, `mysql_prepared`, `write_pipeline`. Answers stay the same; leave it empty in production.",
		func(c *Config, v string) error {
			c.Without = Mechanisms{}
			for _, s := range strings.Split(v, ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				on, ok := c.Without.named(s)
				if !ok {
					return fmt.Errorf("%q is not one of %s", s, strings.Join(MechanismNames, ", "))
				}
				*on = true
			}
			return nil
		}},
	{"PERSONNEL_ENV", "env", EnvDevelopment, "`development` or `production`. In production the service refuses to start without `PERSONNEL_JWT_SECRET`, without `PERSONNEL_ALLOWED_HOSTS` or `PERSONNEL_PUBLIC_URL`, and with a placeholder or low-entropy secret or password (`change-me...`, one character repeated).",
		func(c *Config, v string) error {
			if v != EnvDevelopment && v != EnvProduction {
				return fmt.Errorf("must be %q or %q", EnvDevelopment, EnvProduction)
			}
			c.Env = v
			return nil
		}},
	{"PERSONNEL_JWT_SECRET", "jwt_secret", "", "Secret that signs tokens, at least 32 bytes; every replica needs the same one. Unset on SQLite: generated on first start into `<database>.jwt-secret` (mode 0600) beside the database file. Also read from the file `PERSONNEL_JWT_SECRET_FILE` names.",
		func(c *Config, v string) error {
			if v == "" {
				c.JWTSecret = nil
				return nil
			}
			if len(v) < MinJWTSecret {
				return fmt.Errorf("must be at least %d bytes (got %d); generate one with: openssl rand -base64 48", MinJWTSecret, len(v))
			}
			c.JWTSecret = []byte(v)
			return nil
		}},
	{"PERSONNEL_JWT_ALGORITHM", "jwt_algorithm", "HS256", "Signing algorithm: `HS256`, `HS384` or `HS512`; tokens signed any other way are refused.",
		func(c *Config, v string) error {
			switch v {
			case "HS256", "HS384", "HS512":
				c.JWTAlgorithm = v
				return nil
			}
			return errors.New(`must be "HS256", "HS384" or "HS512"`)
		}},
	{"PERSONNEL_JWT_TTL", "jwt_ttl", "1h", "Lifetime of a token.",
		func(c *Config, v string) error { return positiveDuration(&c.JWTTTL, v) }},
	{"PERSONNEL_JWT_REFRESH_WINDOW", "jwt_refresh_window", "168h", "How long after the original login a token can still be refreshed.",
		func(c *Config, v string) error { return positiveDuration(&c.JWTRefreshWindow, v) }},
	{"PERSONNEL_ADMIN_USER", "admin_user", "", "When the database has no user at start-up, create this editor (with `PERSONNEL_ADMIN_PASSWORD`).",
		func(c *Config, v string) error { c.AdminUser = v; return nil }},
	{"PERSONNEL_ADMIN_PASSWORD", "admin_password", "", "Password of that first editor (at least 8 characters). Also read from the file `PERSONNEL_ADMIN_PASSWORD_FILE` names.",
		func(c *Config, v string) error { c.AdminPassword = v; return nil }},
	{"PERSONNEL_BCRYPT_COST", "bcrypt_cost", "12", "bcrypt cost of stored password hashes (4 to 31; each step doubles the work).",
		func(c *Config, v string) error {
			if err := positiveInt(&c.BcryptCost, v); err != nil || c.BcryptCost < 4 || c.BcryptCost > 31 {
				return errors.New("must be a whole number from 4 to 31")
			}
			return nil
		}},
	{"PERSONNEL_LOGIN_FAILURES_PER_USER", "login_failures_per_user", "5", "Failed logins for one username within the window before further attempts get 429.",
		func(c *Config, v string) error { return positiveInt(&c.LoginFailuresUser, v) }},
	{"PERSONNEL_LOGIN_FAILURES_PER_ADDRESS", "login_failures_per_address", "20", "Failed logins from one client address within the window before further attempts get 429.",
		func(c *Config, v string) error { return positiveInt(&c.LoginFailuresAddr, v) }},
	{"PERSONNEL_LOGIN_FAILURE_WINDOW", "login_failure_window", "15m", "How long a failed login counts against its username and address.",
		func(c *Config, v string) error { return positiveDuration(&c.LoginFailureWindow, v) }},
	{"PERSONNEL_AUTH_SCHEMES", "auth_schemes", "jwt,token,basic", "Comma-separated credentials API requests may carry: `jwt` (`Authorization: JWT <token>` or `Bearer`), `token` (`Token <key>` from `/api-token-auth/`), `basic` (HTTP Basic). A 401 challenges for each one enabled.",
		func(c *Config, v string) error {
			given := map[string]bool{}
			for _, s := range strings.Split(v, ",") {
				s = strings.ToLower(strings.TrimSpace(s))
				if s == "" {
					continue
				}
				if !slices.Contains(AuthSchemeNames, s) {
					return fmt.Errorf("%q is not one of jwt, token, basic", s)
				}
				given[s] = true
			}
			if len(given) == 0 {
				return errors.New("must name at least one of jwt, token, basic")
			}
			c.AuthSchemes = nil
			for _, s := range AuthSchemeNames {
				if given[s] {
					c.AuthSchemes = append(c.AuthSchemes, s)
				}
			}
			return nil
		}},
}

// Default returns the configuration used when nothing is set.
func Default() *Config {
	c := &Config{}
	for _, s := range settings {
		if err := s.set(c, s.Default); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", s.Env, err))
		}
	}
	return c
}

// Load builds the configuration: defaults, then the YAML file at path (when
// path is not empty), then the environment as seen through lookupEnv
// (os.LookupEnv outside tests). The error names the setting at fault.
func Load(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	c := Default()
	if path != "" {
		if err := c.loadFile(path); err != nil {
			return nil, err
		}
	}
	for _, s := range settings {
		v, ok := lookupEnv(s.Env)
		name := s.Env
		if fileEnv := s.FileEnv(); fileEnv != "" {
			if path, given := lookupEnv(fileEnv); given {
				if ok {
					return nil, fmt.Errorf("config: %s and %s are both set; set only one", s.Env, fileEnv)
				}
				var err error
				if v, err = readSecretFile(path); err != nil {
					return nil, fmt.Errorf("config: %s: %w", fileEnv, err)
				}
				ok, name = true, fileEnv
			}
		}
		if ok {
			if err := s.set(c, v); err != nil {
				return nil, fmt.Errorf("config: %s=%q: %w", name, redact(s, v), err)
			}
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// loadFile applies a flat YAML mapping of setting keys to scalar values
// (a list is accepted where a comma-separated value is).
func (c *Config) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: -config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, errEOF) {
			return nil // an empty file sets nothing
		}
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("config: %s:%d: must be a mapping of setting names to values", path, m.Line)
	}
	byKey := make(map[string]Setting, len(settings))
	for _, s := range settings {
		byKey[s.Key] = s
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		s, ok := byKey[k.Value]
		fromFile := false
		if base, cut := strings.CutSuffix(k.Value, "_file"); !ok && cut {
			s, ok = byKey[base]
			fromFile = ok && s.Secret()
			ok = fromFile
		}
		if !ok {
			return fmt.Errorf("config: %s:%d: unknown setting %q (see the README for the list)", path, k.Line, k.Value)
		}
		var val string
		switch {
		case v.Kind == yaml.ScalarNode && fromFile:
			var err error
			if val, err = readSecretFile(v.Value); err != nil {
				return fmt.Errorf("config: %s:%d: %s: %w", path, v.Line, k.Value, err)
			}
		case v.Kind == yaml.ScalarNode:
			val = v.Value
		case v.Kind == yaml.SequenceNode && !fromFile:
			items := make([]string, 0, len(v.Content))
			for _, it := range v.Content {
				items = append(items, it.Value)
			}
			val = strings.Join(items, ",")
		default:
			return fmt.Errorf("config: %s:%d: %s: must be a single value", path, v.Line, s.Key)
		}
		if err := s.set(c, val); err != nil {
			return fmt.Errorf("config: %s:%d: %s: %w", path, v.Line, s.Key, err)
		}
	}
	return nil
}

// errEOF is what the YAML decoder returns for an empty document.
var errEOF = func() error {
	var n yaml.Node
	return yaml.NewDecoder(strings.NewReader("")).Decode(&n)
}()

// readSecretFile reads a secret from a file, as container orchestrators
// mount them: the line ending that editors and `echo` add is not part of it.
func readSecretFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// validate checks what one setting cannot check alone.
func (c *Config) validate() error {
	if (c.AdminUser == "") != (c.AdminPassword == "") {
		return errors.New("config: PERSONNEL_ADMIN_USER and PERSONNEL_ADMIN_PASSWORD must be set together")
	}
	var dbPassword string
	switch c.DBDriver {
	case DriverMySQL:
		m, err := mysql.ParseDSN(c.DBDSN)
		if err != nil {
			return fmt.Errorf("config: PERSONNEL_DB_DSN: not a valid MySQL DSN (user:password@tcp(host:3306)/dbname): %v", redactErr(err))
		}
		dbPassword = m.Passwd
	case DriverPostgres:
		// pgx's parser reads the environment and password files too; the
		// error names the problem, never the password (pgx redacts it).
		pc, err := pgconn.ParseConfig(c.DBDSN)
		if err != nil {
			return fmt.Errorf("config: PERSONNEL_DB_DSN: not a valid PostgreSQL DSN (postgres://user:password@host:5432/dbname or host=... dbname=...): %s", redactPostgres(err.Error()))
		}
		dbPassword = pc.Password
	}
	if c.Env != EnvProduction {
		return nil
	}
	// Links must never be built from a Host header nobody vetted: a
	// client could otherwise make the service hand out links to its host.
	if len(c.AllowedHosts) == 0 && c.PublicURL == nil {
		return errors.New("config: PERSONNEL_ENV=production needs PERSONNEL_ALLOWED_HOSTS (the host names clients use) or PERSONNEL_PUBLIC_URL, so that links are never built from an unchecked Host header")
	}
	// A secret copied from an example is known to everyone who read it.
	for _, s := range []struct {
		env, value string
		distinct   int
	}{
		{"PERSONNEL_JWT_SECRET", string(c.JWTSecret), 8},
		{"PERSONNEL_ADMIN_PASSWORD", c.AdminPassword, 3},
		{"the password in PERSONNEL_DB_DSN", dbPassword, 3},
	} {
		if s.value != "" && WeakSecret(s.value, s.distinct) {
			return fmt.Errorf("config: %s looks like a placeholder or is too easy to guess, which PERSONNEL_ENV=production refuses (generate one with: openssl rand -base64 48)", s.env)
		}
	}
	return nil
}

// placeholders are words of example secrets ("change-me", "<password>").
var placeholders = []string{"changeme", "change-me", "change_me", "replaceme", "replace-me", "placeholder"}

// WeakSecret reports whether a secret is a placeholder from an example
// (it contains "change-me" or the like) or is made of fewer than distinct
// different characters ("xxxxxxxx").
func WeakSecret(secret string, distinct int) bool {
	if strings.HasPrefix(secret, "<") && strings.HasSuffix(secret, ">") {
		return true
	}
	lower := strings.ToLower(secret)
	for _, p := range placeholders {
		if strings.Contains(lower, p) {
			return true
		}
	}
	seen := map[rune]bool{}
	for _, r := range secret {
		seen[r] = true
	}
	return len(seen) < distinct
}

// RedactedDSN returns the DSN with any password replaced, for logs.
func (c *Config) RedactedDSN() string {
	switch c.DBDriver {
	case DriverMySQL:
		m, err := mysql.ParseDSN(c.DBDSN)
		if err != nil {
			return "(unparsable)"
		}
		if m.Passwd != "" {
			m.Passwd = "xxxxx"
		}
		return m.FormatDSN()
	case DriverPostgres:
		return redactPostgres(c.DBDSN)
	}
	return c.DBDSN
}

// pgPassword matches a password in a PostgreSQL keyword DSN (quoted or
// not) or in a URL's query string.
var pgPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)

// redactPostgres replaces every password in text, which holds a PostgreSQL
// URL or keyword DSN: the URL's user information and any password= value.
func redactPostgres(text string) string {
	if u, err := url.Parse(text); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		text = u.Redacted()
	} else if i := strings.Index(text, "://"); i >= 0 {
		// Not parsable as a URL: hide everything between :// and the last
		// @ of the authority, where a password would be.
		if at := strings.LastIndex(text, "@"); at > i {
			text = text[:i+3] + "xxxxx" + text[at:]
		}
	}
	return pgPassword.ReplaceAllString(text, "${1}xxxxx")
}

// redact hides values of settings that may hold secrets.
func redact(s Setting, v string) string {
	if s.Secret() {
		return "(redacted)"
	}
	return v
}

// redactErr keeps a DSN parse error from echoing the DSN itself.
func redactErr(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ":"); i > 0 && strings.Contains(msg, "@") {
		return msg[:i]
	}
	return msg
}

func positiveInt(dst *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return errors.New("must be a positive integer")
	}
	*dst = n
	return nil
}

func nonNegativeInt(dst *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return errors.New("must be a whole number, 0 or more")
	}
	*dst = n
	return nil
}

func nonNegativeDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return errors.New(`must be a duration such as "60s", or "0s"`)
	}
	*dst = d
	return nil
}

// days parses a duration, which may be written in days ("400d"), of at
// least the given least.
func days(dst *time.Duration, v string, least time.Duration) error {
	v = strings.TrimSpace(v)
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(v, "d"); ok {
		var k int
		k, err = strconv.Atoi(n)
		d = time.Duration(k) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d <= 0 {
		return errors.New(`must be a duration such as "400d" or "720h"`)
	}
	if d < least {
		return fmt.Errorf("must be at least %s", least)
	}
	*dst = d
	return nil
}

func positiveDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return errors.New(`must be a positive duration such as "15s" or "1h"`)
	}
	*dst = d
	return nil
}
