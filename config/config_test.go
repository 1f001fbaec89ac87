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
	if c.Addr != ":8000" || c.DBDriver != "sqlite" || c.DBDSN != "personnel.db" || c.PageSizeMax != 1000 ||
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
