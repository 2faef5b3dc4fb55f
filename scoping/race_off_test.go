//go:build !race

package scoping_test

const raceEnabled = false
