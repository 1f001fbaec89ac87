package server_test

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"personnel/logging"
)

// TestMain silences request logs; set PERSONNEL_TEST_LOG=1 to see them.
// Silenced, they are still encoded as in production (JSON, INFO), so that
// benchmarks pay for them.
func TestMain(m *testing.M) {
	if os.Getenv("PERSONNEL_TEST_LOG") == "" {
		slog.SetDefault(logging.New(io.Discard, "json", slog.LevelInfo))
	}
	os.Exit(m.Run())
}
