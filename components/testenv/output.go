package testenv

import "strings"

// Tail returns the last n lines of s (without its final newline), for
// failure messages that quote a long output.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
