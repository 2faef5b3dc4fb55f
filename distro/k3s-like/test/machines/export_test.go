package machines

import "syscall"

// ProcessesIn is processesIn for the namespace bound at path (nil when
// nothing is bound there): what Teardown kills.
func ProcessesIn(path string) []int {
	var ns syscall.Stat_t
	if syscall.Stat(path, &ns) != nil {
		return nil
	}
	return processesIn(ns)
}
