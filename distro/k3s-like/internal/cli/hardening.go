package cli

import (
	"github.com/go-logr/logr"

	"github.com/kubeharness/kubeharness/components/kubeargs"
)

// WarnWeakened logs one "Warning:" line for each hardening default the
// components' final arguments lost (kubeargs.Weakened), naming the flag
// and what was lost, and returns the lines.
func WarnWeakened(log logr.Logger, args map[string][]string) []string {
	var lines []string
	for _, w := range kubeargs.Weakened(args) {
		line := "Warning: a passthrough flag removes a hardening default: " + w.String()
		log.Info(line)
		lines = append(lines, line)
	}
	return lines
}
