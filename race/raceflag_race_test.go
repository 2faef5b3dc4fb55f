//go:build race

package race_test

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = true
