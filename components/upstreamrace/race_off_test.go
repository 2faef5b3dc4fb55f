//go:build !race

package upstreamrace_test

// raceEnabled: the tests are built with -race.
const raceEnabled = false
