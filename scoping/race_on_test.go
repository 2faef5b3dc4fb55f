//go:build race

package scoping_test

// raceEnabled: the race detector slows the property test about ninefold.
const raceEnabled = true
