package main_test

import (
	"context"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"personnel/config"
)

// composeSecrets are the values a .env file gives the compose file.
var composeSecrets = types.Mapping{
	"MARIADB_PASSWORD":         "Zq8-vLx2-db-Pa55",
	"MARIADB_ROOT_PASSWORD":    "Rt7-kWp4-root-Pa55",
	"PERSONNEL_JWT_SECRET":     "Hq3vL9xW2mPz7RtY5bNc8KdF4gJs6AeU",
	"PERSONNEL_ADMIN_PASSWORD": "Tr0ub4dor&3-admin",
}

// loadCompose loads docker-compose.yml with env as the environment. No
// Docker engine runs where the tests run, so the compose file is checked
// by loading it with the compose specification's own loader.
func loadCompose(t *testing.T, env types.Mapping) (*types.Project, error) {
	t.Helper()
	path, err := filepath.Abs("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: maps.Clone(env), // the loader adds to it
	}, func(o *loader.Options) { o.SetProjectName("personnel", true) })
}

func TestCompose_MariaDBGatedPersonnelConfiguredByEnvironment(t *testing.T) {
	project, err := loadCompose(t, composeSecrets)
	if err != nil {
		t.Fatalf("loading docker-compose.yml: %v", err)
	}
	if len(project.Services) != 2 {
		t.Fatalf("services %v, want mariadb and personnel", project.ServiceNames())
	}
	// The database the suite and CI run against, nothing else.
	mariadb, ok := project.Services["mariadb"]
	if !ok || mariadb.Image != "mariadb:10.11" {
		t.Fatalf("mariadb service: %+v", mariadb.Image)
	}
	if mariadb.HealthCheck == nil || len(mariadb.HealthCheck.Test) == 0 {
		t.Fatal("mariadb has no healthcheck")
	}
	named := false
	for _, v := range mariadb.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == "/var/lib/mysql" {
			_, named = project.Volumes[v.Source]
		}
	}
	if !named {
		t.Fatal("mariadb's data is not on a named volume")
	}

	p, ok := project.Services["personnel"]
	if !ok || p.Build == nil || p.Build.Context != project.WorkingDir {
		t.Fatalf("personnel is not built from the repository: %+v", p.Build)
	}
	// After a host restart both must come back, the database too.
	for _, s := range []types.ServiceConfig{mariadb, p} {
		if s.Restart != types.RestartPolicyUnlessStopped && s.Restart != types.RestartPolicyAlways {
			t.Errorf("%s has restart policy %q", s.Name, s.Restart)
		}
	}
	if dep, ok := p.DependsOn["mariadb"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Fatalf("personnel does not wait for mariadb to be healthy: %+v", p.DependsOn)
	}
	known := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Env] = true
		if s.Secret() {
			known[s.FileEnv()] = true
		}
	}
	env := map[string]string{}
	for k, v := range p.Environment {
		if strings.HasPrefix(k, "PERSONNEL_") && !known[k] {
			t.Errorf("personnel sets %s, which the configuration does not know", k)
		}
		if v != nil {
			env[k] = *v
		}
	}
	for _, k := range []string{"PERSONNEL_DB_DRIVER", "PERSONNEL_DB_DSN", "PERSONNEL_JWT_SECRET", "PERSONNEL_ADMIN_USER", "PERSONNEL_ADMIN_PASSWORD"} {
		if env[k] == "" {
			t.Errorf("personnel does not set %s", k)
		}
	}
	// The settings compose gives must be ones the service accepts, in
	// production mode.
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the compose environment is not a valid configuration: %v", err)
	}
	if cfg.Env != config.EnvProduction || cfg.DBDriver != config.DriverMySQL || !strings.Contains(cfg.DBDSN, "@tcp(mariadb:3306)/") {
		t.Errorf("personnel does not use the mariadb service in production: %s %s %s", cfg.Env, cfg.DBDriver, cfg.RedactedDSN())
	}
	checkContainerService(t, p, cfg)
	_, port, _ := net.SplitHostPort(config.Default().Addr)
	published := false
	for _, pc := range p.Ports {
		if strconv.Itoa(int(pc.Target)) == port && pc.Published == port {
			published = true
			if pc.HostIP != "127.0.0.1" {
				t.Errorf("port %s is published on %q, not only on 127.0.0.1", port, pc.HostIP)
			}
		}
	}
	if !published {
		t.Fatalf("port %s is not published: %+v", port, p.Ports)
	}
}

// postgresSecrets are what a .env file gives docker-compose.postgres.yml:
// no MARIADB_* variable among them.
var postgresSecrets = types.Mapping{
	"POSTGRES_PASSWORD":        "Pg5-mWq8-db-Pa55",
	"PERSONNEL_JWT_SECRET":     composeSecrets["PERSONNEL_JWT_SECRET"],
	"PERSONNEL_ADMIN_PASSWORD": composeSecrets["PERSONNEL_ADMIN_PASSWORD"],
}

// loadComposeFile loads the compose file name (beside the repository's
// root) with env as the environment.
func loadComposeFile(t *testing.T, name string, env types.Mapping) (*types.Project, error) {
	t.Helper()
	path, err := filepath.Abs("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: maps.Clone(env),
	}, func(o *loader.Options) { o.SetProjectName("personnel", false) })
}

// environment returns a service's environment as set, and the
// configuration it makes.
func environment(t *testing.T, s types.ServiceConfig) (map[string]string, *config.Config) {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("%s's environment is not a valid configuration: %v", s.Name, err)
	}
	return env, cfg
}

// checkContainerService checks what every Personnel service of a compose
// file needs: it listens on every interface of its container, and is built
// with the version and revision compose is given.
func checkContainerService(t *testing.T, s types.ServiceConfig, cfg *config.Config) {
	t.Helper()
	if host, _, _ := net.SplitHostPort(cfg.Addr); host != "0.0.0.0" {
		t.Errorf("%s listens on %q, not on every interface of its container", s.Name, cfg.Addr)
	}
	if s.Build == nil || s.Build.Args["VERSION"] == nil || s.Build.Args["REVISION"] == nil {
		t.Errorf("%s is not built with VERSION and REVISION: %+v", s.Name, s.Build)
	}
}

// docker-compose.postgres.yml runs PostgreSQL 15 and a Personnel gated on
// its health and configured for it, in production mode, with none of the
// MariaDB file's variables set (compose demands every ":?" variable of a
// file, whichever services run).
func TestCompose_PostgresFileNeedsNoMariaDBVariables(t *testing.T) {
	project, err := loadComposeFile(t, "docker-compose.postgres.yml", postgresSecrets)
	if err != nil {
		t.Fatalf("loading docker-compose.postgres.yml without MARIADB_*: %v", err)
	}
	if project.Name == "personnel" || len(project.Services) != 2 {
		t.Fatalf("project %q with services %v: want a project of its own with postgres and personnel", project.Name, project.ServiceNames())
	}
	pg, ok := project.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:15") {
		t.Fatalf("postgres service: %q", pg.Image)
	}
	if pg.HealthCheck == nil || len(pg.HealthCheck.Test) == 0 {
		t.Fatal("postgres has no healthcheck")
	}
	p, ok := project.Services["personnel"]
	if !ok || p.Build == nil || p.Build.Context != project.WorkingDir {
		t.Fatalf("personnel is not built from the repository: %+v", p.Build)
	}
	if dep, ok := p.DependsOn["postgres"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Fatalf("personnel does not wait for postgres to be healthy: %+v", p.DependsOn)
	}
	_, cfg := environment(t, p)
	if cfg.Env != config.EnvProduction || cfg.DBDriver != config.DriverPostgres || !strings.Contains(cfg.DBDSN, "@postgres:5432/") {
		t.Errorf("personnel does not use the postgres service in production: %s %s %s", cfg.Env, cfg.DBDriver, cfg.RedactedDSN())
	}
	checkContainerService(t, p, cfg)
	for name := range postgresSecrets {
		env := maps.Clone(postgresSecrets)
		delete(env, name)
		if _, err := loadComposeFile(t, "docker-compose.postgres.yml", env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v", name, err)
		}
	}
}

// A database password reaches the driver whole whatever characters it
// holds (but a single quote): written in .env as the README says (in
// single quotes, so that not even a $ is expanded), through compose, into
// the DSN (MySQL) or beside it (PostgreSQL reads PGPASSWORD).
func TestCompose_DatabasePasswordsWithURLReservedCharactersWork(t *testing.T) {
	const password = `p@ss:w/rd?#x%41&y=z+ "q" $HOME;[1]`
	for _, tc := range []struct{ file, variable string }{
		{"docker-compose.yml", "MARIADB_PASSWORD"},
		{"docker-compose.postgres.yml", "POSTGRES_PASSWORD"},
	} {
		secrets := composeSecrets
		if tc.variable == "POSTGRES_PASSWORD" {
			secrets = postgresSecrets
		}
		var dotEnv strings.Builder
		for k, v := range secrets {
			if k == tc.variable {
				v = password
			}
			dotEnv.WriteString(k + "='" + v + "'\n")
		}
		env, err := dotenv.UnmarshalWithLookup(dotEnv.String(), func(string) (string, bool) { return "", false })
		if err != nil || env[tc.variable] != password {
			t.Fatalf("%s: .env gives %q (%v), want %q", tc.file, env[tc.variable], err, password)
		}
		project, err := loadComposeFile(t, tc.file, env)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		penv, cfg := environment(t, project.Services["personnel"])
		got := ""
		switch cfg.DBDriver {
		case config.DriverMySQL:
			mc, err := mysql.ParseDSN(cfg.DBDSN)
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			got = mc.Passwd
		case config.DriverPostgres:
			t.Setenv("PGPASSWORD", penv["PGPASSWORD"])
			pc, err := pgconn.ParseConfig(cfg.DBDSN)
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			got = pc.Password
		}
		if got != password {
			t.Errorf("%s: the driver gets the password %q, want %q", tc.file, got, password)
		}
	}
}

func TestCompose_RefusesToStartWithoutItsSecrets(t *testing.T) {
	for name := range composeSecrets {
		env := types.Mapping{}
		for k, v := range composeSecrets {
			if k != name {
				env[k] = v
			}
		}
		_, err := loadCompose(t, env)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v", name, err)
		}
	}
}

func TestDockerfile_StaticNonRootPinnedImageWithAHealthCheck(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1)); n < 2 {
		t.Errorf("%d stages, want a multi-stage build", n)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(mod)
	if goVersion == nil || !strings.Contains(df, "FROM golang:"+string(goVersion[1])+" ") {
		t.Errorf("the builder is not golang:%s, the version go.mod names", goVersion[1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "EXPOSE 8000", "PERSONNEL_ADDR=0.0.0.0:8000", "ARG VERSION", "ARG REVISION"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*\n?.*CMD \["/personnel", "healthcheck"\]`).MatchString(df) {
		t.Error("no HEALTHCHECK running personnel healthcheck")
	}
	if regexp.MustCompile(`(?m)^VOLUME`).MatchString(df) {
		t.Error("a VOLUME instruction leaves anonymous volumes behind when MySQL holds the data")
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(ignore))
	for _, want := range []string{".git", "*.db", "*.jwt-secret"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(df)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("the image does not run as a non-root user: %v", user)
	}
	// The claim behind CGO_ENABLED=0, that the binary builds without cgo,
	// is checked by .ci/run: a cgo-free build recompiles the whole module,
	// which would dominate a newcomer's first go test.
}

// The README's recipe for a secret in a file: the compose file with the
// variable replaced by its _FILE form and a compose secret.
func TestCompose_SecretsCanComeFromFilesAsTheREADMESays(t *testing.T) {
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	const line = "      PERSONNEL_JWT_SECRET: ${PERSONNEL_JWT_SECRET:?set it in .env}\n"
	text := string(data)
	if !strings.Contains(text, line) {
		t.Fatalf("docker-compose.yml lacks the line the README says to replace: %q", line)
	}
	text = strings.Replace(text, line, "      PERSONNEL_JWT_SECRET_FILE: /run/secrets/jwt_secret\n", 1)
	text = strings.Replace(text, "\n    ports:\n", "\n    secrets: [jwt_secret]\n    ports:\n", 1) // personnel's
	text += "secrets:\n  jwt_secret:\n    file: ./secrets/jwt_secret\n"
	repo, _ := filepath.Abs("../..")
	path := filepath.Join(t.TempDir(), "docker-compose.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := maps.Clone(composeSecrets)
	delete(env, "PERSONNEL_JWT_SECRET")
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  repo,
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("personnel", true) })
	if err != nil {
		t.Fatalf("the README's secrets recipe does not load: %v", err)
	}
	p := project.Services["personnel"]
	if len(p.Secrets) != 1 || p.Secrets[0].Source != "jwt_secret" {
		t.Fatalf("personnel's secrets: %+v", p.Secrets)
	}
	// What the container would see: the secret mounted as a file, named
	// by the _FILE setting.
	secretFile := filepath.Join(t.TempDir(), "jwt_secret")
	os.WriteFile(secretFile, []byte(composeSecrets["PERSONNEL_JWT_SECRET"]+"\n"), 0o600)
	vars := map[string]string{}
	for k, v := range p.Environment {
		if v != nil {
			vars[k] = *v
		}
	}
	if vars["PERSONNEL_JWT_SECRET_FILE"] != "/run/secrets/"+p.Secrets[0].Source {
		t.Fatalf("PERSONNEL_JWT_SECRET_FILE is %q", vars["PERSONNEL_JWT_SECRET_FILE"])
	}
	vars["PERSONNEL_JWT_SECRET_FILE"] = secretFile
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil || string(cfg.JWTSecret) != composeSecrets["PERSONNEL_JWT_SECRET"] {
		t.Fatalf("the secret from its file: %v", err)
	}
}

// The image states the version and revision it was built with: the
// Dockerfile's -ldflags, with the build arguments compose passes, set
// what `personnel version` prints.
func TestDockerfile_BuildArgumentsSetTheVersionAndRevision(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-ldflags="([^"]*)"`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("the Dockerfile's go build has no -ldflags")
	}
	ldflags := strings.NewReplacer("${VERSION}", "v9.8.7-test", "${REVISION}", "0123abcd").Replace(m[1])
	built := filepath.Join(t.TempDir(), "personnel")
	if out, err := exec.Command("go", "build", "-ldflags="+ldflags, "-o", built, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags=%q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(built, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "personnel v9.8.7-test, revision 0123abcd,") {
		t.Fatalf("personnel version: %q, %v", out, err)
	}
}
