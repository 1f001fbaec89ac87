package main_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"personnel/config"
)

// No Docker engine runs where the tests run, so the compose file is
// checked by loading it with the compose specification's own loader.
func TestCompose_MySQLGatedPersonnelConfiguredByEnvironment(t *testing.T) {
	path, err := filepath.Abs("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("personnel", true) })
	if err != nil {
		t.Fatalf("loading docker-compose.yml: %v", err)
	}
	if len(project.Services) != 2 {
		t.Fatalf("services %v, want mysql and personnel", project.ServiceNames())
	}
	mysql, ok := project.Services["mysql"]
	if !ok || !strings.HasPrefix(mysql.Image, "mysql:8.4") {
		t.Fatalf("mysql service: %+v", mysql.Image)
	}
	if mysql.HealthCheck == nil || len(mysql.HealthCheck.Test) == 0 {
		t.Fatal("mysql has no healthcheck")
	}
	named := false
	for _, v := range mysql.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == "/var/lib/mysql" {
			_, named = project.Volumes[v.Source]
		}
	}
	if !named {
		t.Fatal("mysql's data is not on a named volume")
	}

	p, ok := project.Services["personnel"]
	if !ok || p.Build == nil || p.Build.Context != filepath.Dir(path) {
		t.Fatalf("personnel is not built from the repository: %+v", p.Build)
	}
	if dep, ok := p.DependsOn["mysql"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Fatalf("personnel does not wait for mysql to be healthy: %+v", p.DependsOn)
	}
	known := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Env] = true
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
	// The settings compose gives must be ones the service accepts.
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the compose environment is not a valid configuration: %v", err)
	}
	if cfg.DBDriver != config.DriverMySQL || !strings.Contains(cfg.DBDSN, "@tcp(mysql:3306)/") {
		t.Errorf("personnel does not use the mysql service: %s %s", cfg.DBDriver, cfg.RedactedDSN())
	}
	_, port, _ := net.SplitHostPort(config.Default().Addr)
	published := false
	for _, pc := range p.Ports {
		if strconv.Itoa(int(pc.Target)) == port && pc.Published == port {
			published = true
		}
	}
	if !published {
		t.Fatalf("port %s is not published: %+v", port, p.Ports)
	}
}

// The postgres profile adds PostgreSQL 15 and a Personnel gated on its
// health, configured for it; without the profile neither starts.
func TestCompose_PostgresProfileGatedOnAHealthyPostgres(t *testing.T) {
	path, err := filepath.Abs("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("personnel", true); o.Profiles = []string{"postgres"} })
	if err != nil {
		t.Fatalf("loading docker-compose.yml with the postgres profile: %v", err)
	}
	pg, ok := project.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:15") || !slices.Equal(pg.Profiles, []string{"postgres"}) {
		t.Fatalf("postgres service: %q in profiles %v", pg.Image, pg.Profiles)
	}
	if pg.HealthCheck == nil || len(pg.HealthCheck.Test) == 0 {
		t.Fatal("postgres has no healthcheck")
	}
	p, ok := project.Services["personnel-postgres"]
	if !ok || p.Build == nil || !slices.Equal(p.Profiles, []string{"postgres"}) {
		t.Fatalf("personnel-postgres is not built from the repository in the postgres profile: %+v", p)
	}
	if dep, ok := p.DependsOn["postgres"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Fatalf("personnel-postgres does not wait for postgres to be healthy: %+v", p.DependsOn)
	}
	env := map[string]string{}
	for k, v := range p.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the compose environment is not a valid configuration: %v", err)
	}
	if cfg.DBDriver != config.DriverPostgres || !strings.Contains(cfg.DBDSN, "@postgres:5432/") {
		t.Errorf("personnel-postgres does not use the postgres service: %s %s", cfg.DBDriver, cfg.RedactedDSN())
	}
}

func TestDockerfile_StaticNonRootImageWithADataVolume(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1)); n < 2 {
		t.Errorf("%d stages, want a multi-stage build", n)
	}
	for _, want := range []string{"CGO_ENABLED=0", "VOLUME /data", "EXPOSE 8000"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(df)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("the image does not run as a non-root user: %v", user)
	}
	// The claim behind CGO_ENABLED=0: the binary builds without cgo.
	cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "personnel"), ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 build: %v\n%s", err, out)
	}
}
