package main_test

import (
	"io"
	"net/http"
	"regexp"
	"testing"
)

// serve collects garbage at GOGC=200 (serveGCPercent) when the environment
// sets no GOGC, and at the operator's GOGC when it does, as the runtime
// itself reports it in the metrics.
func TestServe_CollectsGarbageAtGOGC200UnlessGOGCIsSet(t *testing.T) {
	gogc := regexp.MustCompile(`(?m)^go_gc_gogc_percent (\S+)$`)
	for _, tc := range []struct{ env, want string }{
		{"GOGC=", "200"}, // empty, whatever this process has: the runtime's default, so serve's
		{"GOGC=50", "50"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			s := start(t, tc.env)
			resp, err := http.Get("http://" + s.addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			m := gogc.FindSubmatch(body)
			if m == nil {
				t.Fatalf("no go_gc_gogc_percent in the metrics (status %d)", resp.StatusCode)
			}
			if got := string(m[1]); got != tc.want {
				t.Errorf("go_gc_gogc_percent = %s, want %s", got, tc.want)
			}
		})
	}
}
