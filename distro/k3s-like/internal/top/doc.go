// Package top is `k3s-like top`: which component of a running server uses
// the CPU, and how many goroutines each runs. It takes CPU profiles (in
// pieces of at most 5 s) and a goroutine profile from the status
// endpoint's /debug/pprof (--enable-pprof) and adds up their samples by
// the harness's pprof label component=<name> (package profshare).
package top
