//go:build !race

package server_test

// raceDetector says the race detector is on: it slows some code far more
// than other code, so latency comparisons mean nothing under it.
const raceDetector = false
