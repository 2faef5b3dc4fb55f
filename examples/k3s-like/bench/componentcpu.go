package main

import "time"

// ---------------------------------------------------------------------------
// HOOK: A's CPU split per component (to be implemented; issue 17, "Which
// component costs what, in one process").
//
// startComponentCPU is called for every A run right before the workload
// starts (the first Node is created), with the status endpoint's address
// (host:port, plain HTTP on loopback). The function it returns is called
// once every Pod is bound, before the process is stopped, and returns the
// CPU seconds each component used in that window: keyed by the pprof label
// `component` of the status endpoint's /debug/pprof/profile samples (""
// for the unlabelled rest), for instance by taking consecutive profiles
// in the background between the two calls and summing them per label.
//
// It returns nil for now; the report prints A's per-component column only
// when it returns data, beside B's per-process CPU over the same window.
// A failure should return an error rather than partial figures. Profiling
// runs inside the measured window: its own cost lands in A's CPU figures,
// which is for the report to say.
// ---------------------------------------------------------------------------
func startComponentCPU(statusAddr string) (stop func() (map[string]time.Duration, error)) {
	_ = statusAddr
	return func() (map[string]time.Duration, error) { return nil, nil }
}
