package server_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain silences request logs; set PERSONNEL_TEST_LOG=1 to see them.
func TestMain(m *testing.M) {
	if os.Getenv("PERSONNEL_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}
