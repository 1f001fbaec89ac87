package config_test

import (
	"slices"
	"strings"
	"testing"

	"personnel/config"
)

func TestLoad_AuthSchemesDefaultToAllInChallengeOrder(t *testing.T) {
	c, err := config.Load("", env(nil))
	if err != nil || !slices.Equal(c.AuthSchemes, []string{"jwt", "token", "basic"}) {
		t.Fatalf("default schemes %q, %v", c.AuthSchemes, err)
	}
	c, err = config.Load("", env(map[string]string{"PERSONNEL_AUTH_SCHEMES": " Basic, jwt,basic "}))
	if err != nil || !slices.Equal(c.AuthSchemes, []string{"jwt", "basic"}) {
		t.Fatalf("schemes %q, %v", c.AuthSchemes, err)
	}
	for _, bad := range []string{"", " , ", "jwt,digest"} {
		if _, err := config.Load("", env(map[string]string{"PERSONNEL_AUTH_SCHEMES": bad})); err == nil || !strings.Contains(err.Error(), "PERSONNEL_AUTH_SCHEMES") {
			t.Errorf("PERSONNEL_AUTH_SCHEMES=%q: %v", bad, err)
		}
	}
}
