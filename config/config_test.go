package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"personnel/config"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoad_DefaultsRunWithNothingSet(t *testing.T) {
	c, err := config.Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8000" || c.DBDriver != "sqlite" || c.DBDSN != "personnel.db" || c.PageSizeMax != 1000 ||
		c.PublicURL != nil || c.BodyLimit != 1<<20 || c.ShutdownTimeout != 15*time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

func TestLoad_FileThenEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, []byte("addr: \":9000\"\npage_size_max: 50\ntrusted_proxies: [10.0.0.0/8, 192.0.2.1]\npublic_url: https://hr.example.com/\n"), 0o600)
	c, err := config.Load(path, env(map[string]string{"PERSONNEL_PAGE_SIZE_MAX": "70"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.PageSizeMax != 70 || len(c.TrustedProxies) != 2 || c.PublicURL.String() != "https://hr.example.com" {
		t.Fatalf("got addr %q page_size_max %d proxies %v public %v", c.Addr, c.PageSizeMax, c.TrustedProxies, c.PublicURL)
	}
}

func TestLoad_BadValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		file string
		want string
	}{
		{env: map[string]string{"PERSONNEL_PAGE_SIZE_MAX": "lots"}, want: "PERSONNEL_PAGE_SIZE_MAX"},
		{env: map[string]string{"PERSONNEL_DB_DRIVER": "oracle"}, want: "PERSONNEL_DB_DRIVER"},
		{env: map[string]string{"PERSONNEL_DB_FLAVOR": "cockroach"}, want: "PERSONNEL_DB_FLAVOR"},
		{env: map[string]string{"PERSONNEL_DB_DRIVER": "postgres", "PERSONNEL_DB_DSN": "postgres://app:secret@db:99999999/x"}, want: "PERSONNEL_DB_DSN"},
		{env: map[string]string{"PERSONNEL_DB_DRIVER": "postgres", "PERSONNEL_DB_DSN": "host=db password=secret port=nope"}, want: "PERSONNEL_DB_DSN"},
		{env: map[string]string{"PERSONNEL_ADDR": "8000"}, want: "PERSONNEL_ADDR"},
		{env: map[string]string{"PERSONNEL_PUBLIC_URL": "hr.example.com"}, want: "PERSONNEL_PUBLIC_URL"},
		{env: map[string]string{"PERSONNEL_TRUSTED_PROXIES": "10.0.0.0/99"}, want: "PERSONNEL_TRUSTED_PROXIES"},
		{env: map[string]string{"PERSONNEL_SHUTDOWN_TIMEOUT": "soon"}, want: "PERSONNEL_SHUTDOWN_TIMEOUT"},
		{env: map[string]string{"PERSONNEL_DB_DRIVER": "mysql", "PERSONNEL_DB_DSN": "root:secret@nonsense"}, want: "PERSONNEL_DB_DSN"},
		{file: "page_size_max: -1\n", want: "page_size_max"},
		{file: "page_sise_max: 10\n", want: `unknown setting "page_sise_max"`},
		{file: "- a list\n", want: "mapping"},
	} {
		path := ""
		if tc.file != "" {
			path = filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(path, []byte(tc.file), 0o600)
		}
		_, err := config.Load(path, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v file %q: error %v, want one naming %q", tc.env, tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows a password: %v", err)
		}
	}
}

func TestRedactedDSN_HidesThePassword(t *testing.T) {
	c, err := config.Load("", env(map[string]string{"PERSONNEL_DB_DRIVER": "mysql", "PERSONNEL_DB_DSN": "app:s3cret@tcp(db:3306)/personnel"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RedactedDSN(); strings.Contains(got, "s3cret") || !strings.Contains(got, "db:3306") {
		t.Fatalf("RedactedDSN() = %q", got)
	}
	for dsn, keep := range map[string]string{
		"postgres://app:s3cret@db:5432/personnel?sslmode=disable":   "db:5432/personnel",
		"postgresql://app:s3cret@db/personnel":                      "app:xxxxx@db",
		"postgres://app@db/personnel?password=s3cret&sslmode=allow": "sslmode=allow",
		"host=db user=app password=s3cret dbname=personnel":         "dbname=personnel",
		"host=db password='s3 cret' dbname=personnel":               "host=db",
		"host=db password = s3cret":                                 "host=db",
	} {
		c, err := config.Load("", env(map[string]string{"PERSONNEL_DB_DRIVER": "postgres", "PERSONNEL_DB_DSN": dsn}))
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if got := c.RedactedDSN(); strings.Contains(got, "s3") || !strings.Contains(got, keep) {
			t.Errorf("RedactedDSN() of %q = %q, want no password and %q kept", dsn, got, keep)
		}
	}
}

// The README's configuration table must list every setting with its
// default, so the documentation cannot drift from the code.
func TestREADME_ListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range config.Settings() {
		row := "| `" + s.Env + "` | `" + s.Key + "` | `" + s.Default + "` |"
		if s.Default == "" {
			row = "| `" + s.Env + "` | `" + s.Key + "` | (none) |"
		}
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md lacks the row starting %q", row)
		}
	}
}

func TestLoad_EverySecretSettingCanComeFromAFile(t *testing.T) {
	dir := t.TempDir()
	values := map[string]string{
		"PERSONNEL_DB_DSN":         "app:s3cret-Pa55@tcp(db:3306)/personnel",
		"PERSONNEL_JWT_SECRET":     "f1le-secret-0123456789abcdefghijklmnop",
		"PERSONNEL_ADMIN_PASSWORD": "from-a-file-Pa55",
	}
	e := map[string]string{"PERSONNEL_DB_DRIVER": "mysql", "PERSONNEL_ADMIN_USER": "admin"}
	secrets := 0
	for _, s := range config.Settings() {
		if !s.Secret() {
			continue
		}
		secrets++
		v, ok := values[s.Env]
		if !ok {
			t.Fatalf("no test value for the secret setting %s", s.Env)
		}
		path := filepath.Join(dir, s.Key)
		// Files written by editors and echo end with a newline, which is not part of the secret.
		if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e[s.FileEnv()] = path
	}
	if secrets != len(values) {
		t.Fatalf("%d secret settings, want %d", secrets, len(values))
	}
	c, err := config.Load("", env(e))
	if err != nil {
		t.Fatal(err)
	}
	if c.DBDSN != values["PERSONNEL_DB_DSN"] || string(c.JWTSecret) != values["PERSONNEL_JWT_SECRET"] || c.AdminPassword != values["PERSONNEL_ADMIN_PASSWORD"] {
		t.Fatalf("read %q %q %q", c.DBDSN, c.JWTSecret, c.AdminPassword)
	}

	e["PERSONNEL_JWT_SECRET"] = values["PERSONNEL_JWT_SECRET"]
	if _, err := config.Load("", env(e)); err == nil || !strings.Contains(err.Error(), "PERSONNEL_JWT_SECRET_FILE") {
		t.Errorf("both the variable and its file: %v", err)
	}
	delete(e, "PERSONNEL_JWT_SECRET")
	e["PERSONNEL_JWT_SECRET_FILE"] = filepath.Join(dir, "missing")
	if _, err := config.Load("", env(e)); err == nil || !strings.Contains(err.Error(), "PERSONNEL_JWT_SECRET_FILE") {
		t.Errorf("a missing file: %v", err)
	}

	yamlPath := filepath.Join(dir, "c.yaml")
	os.WriteFile(yamlPath, []byte("jwt_secret_file: "+filepath.Join(dir, "jwt_secret")+"\n"), 0o600)
	c, err = config.Load(yamlPath, env(nil))
	if err != nil || string(c.JWTSecret) != values["PERSONNEL_JWT_SECRET"] {
		t.Fatalf("jwt_secret_file in YAML: %v %q", err, c.JWTSecret)
	}
}

func TestLoad_ProductionNeedsAllowedHostsOrPublicURL(t *testing.T) {
	base := map[string]string{"PERSONNEL_ENV": "production", "PERSONNEL_JWT_SECRET": "Hq3vL9xW2mPz7RtY5bNc8KdF4gJs6AeU"}
	if _, err := config.Load("", env(base)); err == nil || !strings.Contains(err.Error(), "PERSONNEL_ALLOWED_HOSTS") {
		t.Fatalf("production without allowed hosts or public URL: %v", err)
	}
	for k, v := range map[string]string{"PERSONNEL_ALLOWED_HOSTS": "hr.example.com, .example.org", "PERSONNEL_PUBLIC_URL": "https://hr.example.com"} {
		e := map[string]string{k: v}
		for bk, bv := range base {
			e[bk] = bv
		}
		if _, err := config.Load("", env(e)); err != nil {
			t.Errorf("production with %s: %v", k, err)
		}
	}
	c, err := config.Load("", env(map[string]string{"PERSONNEL_ALLOWED_HOSTS": " HR.example.com ,.example.org,*"}))
	if err != nil || strings.Join(c.AllowedHosts, " ") != "hr.example.com .example.org *" {
		t.Fatalf("allowed hosts %q: %v", c.AllowedHosts, err)
	}
	if _, err := config.Load("", env(map[string]string{"PERSONNEL_ALLOWED_HOSTS": "https://hr.example.com/"})); err == nil {
		t.Error("a URL was accepted as a host name")
	}
}

func TestLoad_ProductionRefusesPlaceholderAndLowEntropySecrets(t *testing.T) {
	good := map[string]string{
		"PERSONNEL_ENV": "production", "PERSONNEL_ALLOWED_HOSTS": "hr.example.com",
		"PERSONNEL_JWT_SECRET": "Hq3vL9xW2mPz7RtY5bNc8KdF4gJs6AeU", "PERSONNEL_ADMIN_USER": "admin",
		"PERSONNEL_ADMIN_PASSWORD": "Tr0ub4dor&3", "PERSONNEL_DB_DRIVER": "mysql",
		"PERSONNEL_DB_DSN": "app:Zq8-vLx2@tcp(db:3306)/personnel",
	}
	if _, err := config.Load("", env(good)); err != nil {
		t.Fatalf("good production settings refused: %v", err)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"PERSONNEL_JWT_SECRET", "change-me-change-me-change-me-change-me", "PERSONNEL_JWT_SECRET"},
		{"PERSONNEL_JWT_SECRET", strings.Repeat("a", 48), "PERSONNEL_JWT_SECRET"},
		{"PERSONNEL_ADMIN_PASSWORD", "admin-change-me", "PERSONNEL_ADMIN_PASSWORD"},
		{"PERSONNEL_ADMIN_PASSWORD", "<the first editor's password>", "PERSONNEL_ADMIN_PASSWORD"},
		{"PERSONNEL_ADMIN_PASSWORD", "xxxxxxxxxx", "PERSONNEL_ADMIN_PASSWORD"},
		{"PERSONNEL_DB_DSN", "app:personnel-change-me@tcp(db:3306)/personnel", "PERSONNEL_DB_DSN"},
	} {
		e := map[string]string{}
		for k, v := range good {
			e[k] = v
		}
		e[tc.key] = tc.value
		_, err := config.Load("", env(e))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.value) {
			t.Errorf("the error shows the secret: %v", err)
		}
		e["PERSONNEL_ENV"] = "development"
		if _, err := config.Load("", env(e)); err != nil {
			t.Errorf("development refused %s=%q: %v", tc.key, tc.value, err)
		}
	}
}
